// Owns one generator thread: its share of the sync clients and REST streams, fired on the open-model schedule, measured into histograms sent each interval.
import { parentPort, workerData } from 'node:worker_threads';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import * as Y from 'yjs';
import { Recorder } from './histograms.js';
import { Arrivals, documentIdOf, rng, type ClientPlan, type ClientResult, type FromWorker, type ToWorker, type WorkerPlan } from './plan.js';
import { mixRequest, replyRequest, restCall, threadRequest, type OperationContext } from './rest-client.js';
import { REST_OPERATIONS, durationSeconds, type RestOperation } from './scenario.js';
import { nowMs, Scheduler } from './scheduler.js';
import { openSync, prepareTarget, type SyncConnection } from './sync-client.js';

/** Requests one thread keeps in flight at most; beyond it a due request is counted as dropped, never delayed. */
const MAX_IN_FLIGHT = 4096;
const MAX_ERROR_KINDS = 50;
const STAMPS = 'plait-load';
const TEXT = 'content';
/** Stamps each sender leaves in the document (older ones are deleted as it sends). */
const KEEP_STAMPS = 32;

interface LiveClient {
  readonly plan: ClientPlan;
  conn?: SyncConnection;
  stamps?: Y.Array<number[]>;
  /** Highest sequence number seen per sending client: Yjs applies one client's updates in order, so it holds all below. */
  readonly seen: Map<number, number>;
  open: boolean;
  everSynced: boolean;
  /** When the first handshake completed. */
  syncedAt?: number;
  /** When the current socket opened: presence states stamped earlier are its snapshot, not live changes. */
  presenceSince?: number;
  connects: number;
  disconnects: number;
  live: number;
  seq: number;
  left: boolean;
}

const plan = workerData as WorkerPlan;
const port = parentPort;
if (port === null) throw new Error('worker.ts runs as a worker thread');
const post = (message: FromWorker): void => port.postMessage(message);

const recorder = new Recorder();
const random = rng(plan.seed + plan.workerId * 7919);
/** Arrival times draw from their own stream, so one seed makes one schedule whatever the answers and content. */
const scheduleRandom = rng(plan.seed * 31 + plan.workerId);
const clients = new Map<number, LiveClient>();
const sentPerDoc = new Array<number>(plan.scenario.documents).fill(0);
const errorKinds = new Map<string, number>();
let inFlight = 0;
let startAt = 0;
let scheduler: Scheduler | undefined;
let intervalTimer: NodeJS.Timeout | undefined;
let intervalIndex = 0;
let lastEmitAt: number | undefined;
let elu: EventLoopUtilization = performance.eventLoopUtilization();

function noteError(kind: string): void {
  recorder.count('errors');
  if (errorKinds.has(kind) || errorKinds.size < MAX_ERROR_KINDS) errorKinds.set(kind, (errorKinds.get(kind) ?? 0) + 1);
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz     ';
function randomText(size: number): string {
  let out = '';
  for (let i = 0; i < size; i++) out += ALPHABET[Math.floor(random() * ALPHABET.length)];
  return out;
}

// ---- sync clients ----

function join(client: LiveClient, intendedAt: number): void {
  const { plan: p } = client;
  const conn = openSync(plan.target, documentIdOf(plan.runId, p.doc), p.token, {
    connected: () => {
      client.open = true;
      client.presenceSince = nowMs();
      recorder.count(client.connects++ === 0 ? 'sync.connects' : 'sync.reconnects');
    },
    disconnected: (code, reason) => {
      if (client.left) return;
      client.open = false;
      client.disconnects++;
      recorder.count('sync.disconnects');
      noteError(`sync close ${code ?? '-'} ${reason} (${p.role})`.replace('  ', ' '));
    },
    synced: () => {
      if (client.everSynced) return;
      client.everSynced = true;
      client.syncedAt = nowMs();
      recorder.record('sync.join', client.syncedAt - intendedAt);
      // a churning client shows itself once it is in: its arrival is its presence change, timed from now
      if (p.role === 'churn') setPresence(client, client.syncedAt);
    },
  });
  client.conn = conn;
  const stamps = conn.doc.getArray<number[]>(STAMPS);
  client.stamps = stamps;
  stamps.observe((event) => {
    if (event.transaction.local) return;
    // updates that arrive before the handshake completes are catch-up (late joiners, reconnects), not live
    const live = conn.isSynced();
    const now = nowMs();
    for (const item of event.changes.added) {
      for (const stamp of item.content.getContent() as number[][]) {
        const [sender = -1, seq = -1] = stamp;
        if (seq > (client.seen.get(sender) ?? -1)) client.seen.set(sender, seq);
        if (!live) {
          recorder.count('edits.caughtUp');
          continue;
        }
        client.live++;
        recorder.count('edits.received');
        recorder.record('sync.e2e', now - (stamp[2] ?? now));
      }
    }
  });
  conn.awareness.on('change', ({ added, updated }: { added: number[]; updated: number[] }, origin: unknown) => {
    const since = client.presenceSince;
    if (origin === 'local' || since === undefined) return;
    const now = nowMs();
    const states = conn.awareness.getStates();
    for (const id of [...added, ...updated]) {
      if (id === conn.doc.clientID) continue;
      const t = (states.get(id) as { t?: unknown } | undefined)?.t;
      // states older than this socket are the snapshot a (re)connecting client gets, not live changes
      if (typeof t !== 'number' || t < since) continue;
      recorder.count('presence.received');
      recorder.record('presence.e2e', now - t);
    }
  });
}

function leave(client: LiveClient): void {
  if (client.left) return;
  client.left = true;
  client.open = false;
  client.conn?.destroy();
  if (client.plan.role === 'churn') recorder.count('churn.leaves');
}

function setPresence(client: LiveClient, intendedAt: number): void {
  const conn = client.conn;
  if (conn === undefined || client.left) return;
  conn.awareness.setLocalState({ user: client.plan.userId, cursor: Math.floor(random() * 1000), t: intendedAt });
  recorder.count('presence.sent');
}

function deleteOldestStamp(stamps: Y.Array<number[]>, sender: number): void {
  let index = 0;
  for (const stamp of stamps) {
    if (stamp[0] === sender) {
      stamps.delete(index, 1);
      return;
    }
    index++;
  }
}

/** Edits a client's copy holds: for each sender, everything up to the highest sequence seen. */
function received(client: LiveClient): number {
  let sum = 0;
  for (const seq of client.seen.values()) sum += seq + 1;
  return sum;
}

function edit(client: LiveClient, intendedAt: number): void {
  const editing = plan.scenario.editing;
  const conn = client.conn;
  if (editing === undefined || conn === undefined || client.stamps === undefined || client.left) return;
  const { min, max } = editing.textSize;
  const inserted = randomText(min + Math.floor(random() * (max - min + 1)));
  const text = conn.doc.getText(TEXT);
  const stamps = client.stamps;
  conn.doc.transact(() => {
    const length = text.length;
    if (length + inserted.length > editing.maxDocumentChars) {
      const cut = Math.min(length, inserted.length);
      text.delete(Math.floor(random() * (length - cut + 1)), cut);
    }
    text.insert(Math.floor(random() * (text.length + 1)), inserted);
    const seq = client.seq++;
    stamps.push([[client.plan.id, seq, intendedAt]]);
    client.seen.set(client.plan.id, seq);
    // each sender keeps only its latest stamps, so long runs do not grow every copy of the document without bound
    if (seq >= KEEP_STAMPS) deleteOldestStamp(stamps, client.plan.id);
  });
  sentPerDoc[client.plan.doc] = (sentPerDoc[client.plan.doc] ?? 0) + 1;
  recorder.count('edits.sent');
}

/** Arms a recurring per-client stream of `rate`/s from the client's join (no ramp: joins are the ramp). */
function every(rate: number, from: number, fire: (intendedAt: number) => void): void {
  if (rate <= 0 || scheduler === undefined) return;
  const arrivals = new Arrivals(rate, 0, plan.scenario.arrivals, scheduleRandom, from);
  scheduler.at(startAt + arrivals.next() * 1000, (at) => {
    fire(at);
    return startAt + arrivals.next() * 1000;
  });
}

function armClient(p: ClientPlan): void {
  const client: LiveClient = { plan: p, seen: new Map(), open: false, everSynced: false, connects: 0, disconnects: 0, live: 0, seq: 0, left: false };
  clients.set(p.id, client);
  const s = scheduler;
  if (s === undefined) return;
  s.at(startAt + p.joinAt * 1000, (at) => {
    join(client, at);
    if (p.role === 'churn') recorder.count('churn.joins');
    return undefined;
  });
  if (p.leaveAt !== undefined) s.at(startAt + p.leaveAt * 1000, () => (leave(client), undefined));
  if (p.role === 'editor') {
    every(plan.scenario.editing?.editsPerSecond ?? 0, p.joinAt, (at) => edit(client, at));
    every(plan.scenario.presence?.updatesPerSecond ?? 0, p.joinAt, (at) => setPresence(client, at));
  }
}

// ---- REST streams ----

function context(): OperationContext {
  return {
    organizationId: plan.target.organizationId ?? '',
    documentId: documentIdOf(plan.runId, Math.floor(random() * plan.scenario.documents)),
    editorId: plan.target.editorId ?? 'main',
    userId: `${plan.runId}-rest${plan.workerId}`,
  };
}

function request(op: string, intendedAt: number, path: string, data: unknown): void {
  const auth = plan.rest;
  if (auth === undefined) return;
  recorder.count(`rest.${op}.sent`);
  if (inFlight >= MAX_IN_FLIGHT) {
    recorder.count(`rest.${op}.dropped`);
    noteError(`rest ${op}: dropped, ${MAX_IN_FLIGHT} requests already in flight`);
    return;
  }
  inFlight++;
  void restCall(auth, path, data).then((outcome) => {
    inFlight--;
    // measured from the intended send time: generator lag and queueing count as latency
    recorder.record(`rest.${op}`, nowMs() - intendedAt);
    if (outcome.ok) {
      recorder.count(`rest.${op}.ok`);
      return;
    }
    recorder.count(`rest.${op}.error`);
    noteError(`rest ${op}: ${outcome.status} ${outcome.error ?? ''} ${outcome.message ?? ''}`.trim().slice(0, 200));
  });
}

function armRest(): void {
  const s = scheduler;
  const { scenario } = plan;
  if (s === undefined || plan.rest === undefined) return;
  const share = 1 / plan.workers;
  const stream = (rate: number, fire: (at: number) => void): void => {
    const arrivals = new Arrivals(rate * share, scenario.rampUpSeconds, scenario.arrivals, scheduleRandom);
    s.at(startAt + arrivals.next() * 1000, (at) => {
      fire(at);
      return startAt + arrivals.next() * 1000;
    });
  };
  const mix = scenario.rest;
  if (mix !== undefined) {
    const ops = REST_OPERATIONS.filter((op) => (mix.mix[op] ?? 0) > 0);
    const total = ops.reduce((sum, op) => sum + (mix.mix[op] ?? 0), 0);
    const pick = (): RestOperation => {
      let r = random() * total;
      for (const op of ops) if ((r -= mix.mix[op] ?? 0) < 0) return op;
      return ops[ops.length - 1] as RestOperation;
    };
    stream(mix.requestsPerSecond, (at) => {
      const op = pick();
      const { path, data } = mixRequest(op, context());
      request(op, at, path, data);
    });
  }
  const comments = scenario.comments;
  if (comments !== undefined) {
    let threads = 0;
    stream(comments.threadsPerSecond, (at) => {
      const c = context();
      const annotationId = `${plan.runId}-w${plan.workerId}-a${threads++}`;
      const thread = threadRequest(c, annotationId, randomText(40));
      request('comments.thread', at, thread.path, thread.data);
      for (let k = 1; k <= comments.repliesPerThread; k++) {
        s.at(at + k * comments.replyEverySeconds * 1000, (replyAt) => {
          const reply = replyRequest(c, annotationId, randomText(40));
          request('comments.reply', replyAt, reply.path, reply.data);
          return undefined;
        });
      }
    });
  }
}

// ---- figures ----

function emitInterval(): void {
  // the interval that just ended by the clock: a thread that fell behind skips indexes rather than drifting
  const now = nowMs();
  const index = Math.max(intervalIndex, Math.floor((now - startAt) / plan.intervalMs) - 1);
  const seconds = (now - (lastEmitAt ?? startAt)) / 1000;
  lastEmitAt = now;
  intervalIndex = index + 1;
  const next = performance.eventLoopUtilization();
  const used = performance.eventLoopUtilization(next, elu);
  elu = next;
  const { histograms, counters } = recorder.take();
  let open = 0;
  let synced = 0;
  for (const client of clients.values()) {
    if (client.left || client.conn === undefined) continue;
    if (client.open) open++;
    if (client.conn.isSynced()) synced++;
  }
  post({
    type: 'interval',
    workerId: plan.workerId,
    figures: { index, seconds, histograms, counters, gauges: { 'connections.open': open, 'connections.synced': synced, 'rest.inFlight': inFlight }, elu: used.utilization },
  });
}

function armIntervals(): void {
  const tick = (): void => {
    emitInterval();
    intervalTimer = setTimeout(tick, Math.max(0, startAt + (intervalIndex + 1) * plan.intervalMs - nowMs()));
  };
  intervalTimer = setTimeout(tick, Math.max(0, startAt + plan.intervalMs - nowMs()));
}

// ---- control ----

async function settle(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = nowMs() + timeoutMs;
  // the generator polls its own state here (not a test): in-flight answers and late updates arrive on their own
  while (!check() && nowMs() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

function results(): ClientResult[] {
  return [...clients.values()]
    .filter((client) => client.conn !== undefined)
    .map((client) => ({
      id: client.plan.id,
      doc: client.plan.doc,
      role: client.plan.role,
      received: received(client),
      live: client.live,
      synced: !client.left && (client.conn?.isSynced() ?? false),
      disconnects: client.disconnects,
    }));
}

async function handle(message: ToWorker): Promise<void> {
  if (message.type === 'start') {
    startAt = message.startAt;
    scheduler = new Scheduler((late) => recorder.record('generator.lag', late), startAt + durationSeconds(plan.scenario) * 1000);
    armIntervals();
    for (const client of plan.clients) armClient(client);
    armRest();
  } else if (message.type === 'stop') {
    if (message.early) scheduler?.stop();
    else scheduler?.finish();
    await settle(() => inFlight === 0, 30_000);
    post({ type: 'stopped', workerId: plan.workerId, sentPerDoc });
  } else if (message.type === 'drain') {
    const expected = message.sentPerDoc;
    const waiting = (): LiveClient[] =>
      [...clients.values()].filter((c) => !c.left && c.stamps !== undefined && received(c) < (expected[c.plan.doc] ?? 0));
    await settle(() => waiting().length === 0, message.timeoutMs);
    clearTimeout(intervalTimer);
    emitInterval();
    post({ type: 'drained', workerId: plan.workerId, clients: results(), errors: [...errorKinds].map(([kind, n]) => `${n}× ${kind}`) });
  } else {
    for (const client of clients.values()) leave(client);
    port?.close();
  }
}

port.on('message', (message: ToWorker) => {
  handle(message).catch((error: unknown) => post({ type: 'failed', workerId: plan.workerId, message: String((error as Error).stack ?? error) }));
});

prepareTarget(plan.target).then(
  () => post({ type: 'ready' }),
  (error: unknown) => post({ type: 'failed', workerId: plan.workerId, message: (error as Error).message }),
);
