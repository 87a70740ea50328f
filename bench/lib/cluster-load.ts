// Owns one load process of the cluster bench: raw WebSocket writers and readers of many documents, driven over IPC.
import { performance } from 'node:perf_hooks';
import { connect, type NatsConnection } from 'nats';
import WebSocket from 'ws';
import * as Y from 'yjs';
import { writeUpdate } from '../../src/sync/protocol.js';
import { Samples, summarize, type Summary } from './stats.js';

/**
 * Raw frames, not providers: a writer is a Y.Doc whose updates are sent as sync UPDATE frames, and a reader is a bare
 * socket that never decodes Yjs: it finds the writer's markers (`#<seq>;`, inserted text, which stays contiguous in
 * the server's merged frames) in the bytes it receives. So the load process costs little beside the servers.
 */
export interface LoadDoc {
  readonly writerUrl: string;
  /** Reader socket URLs, each with the group its latency is counted in (e.g. `owner`, `relay`). */
  readonly readers: ReadonlyArray<{ readonly url: string; readonly group: string }>;
}

export type LoadCommand =
  | { readonly type: 'connect'; readonly docs: readonly LoadDoc[] }
  | {
      readonly type: 'run';
      readonly mode: 'closed' | 'paced';
      readonly window: number;
      readonly rate: number;
      readonly payload: number;
      readonly warmupMs: number;
      readonly measureMs: number;
      /** Paced mode: also time a bare NATS hop (publish on one connection, receive on another) at every tick, group `nats`. */
      readonly natsProbeUrl?: string;
    };

export interface LoadResult {
  /** Updates seen by every reader of their document within the measured window. */
  readonly delivered: number;
  readonly measuredMs: number;
  /** This process's CPU time over the measured window. */
  readonly cpuMicros: number;
  /** Writer-to-reader latency (ms) by reader group, over the measured window. */
  readonly latency: Record<string, Summary>;
  /** Updates sent in the window that some reader had not seen when it ended. */
  readonly unfinished: number;
  readonly closes: number;
}

export type LoadReply = { readonly type: 'connected' } | { readonly type: 'result'; readonly result: LoadResult } | { readonly type: 'failed'; readonly error: string };

const MARKER = /#(\d+);/g;

class DocLoad {
  readonly doc = new Y.Doc();
  readonly writer: WebSocket;
  readonly readers: WebSocket[] = [];
  /** When each update was sent, and how many readers have seen it. */
  readonly sentAt = new Map<number, number>();
  readonly seen = new Map<number, number>();
  next = 0;
  inFlight = 0;

  constructor(readonly spec: LoadDoc, readonly run: LoadRun) {
    this.writer = new WebSocket(spec.writerUrl);
    this.writer.on('close', () => run.closes++);
    this.writer.on('error', () => undefined);
    this.doc.on('update', (update: Uint8Array) => this.writer.send(writeUpdate(update)));
  }

  openReaders(): Array<Promise<void>> {
    return this.spec.readers.map(({ url, group }) => {
      const socket = new WebSocket(url);
      this.readers.push(socket);
      socket.on('message', (data: Buffer) => this.received(data, group));
      socket.on('close', () => this.run.closes++);
      return opened(socket);
    });
  }

  send(payload: number): void {
    const seq = this.next++;
    const text = `#${seq};`;
    this.sentAt.set(seq, performance.now());
    this.inFlight++;
    const content = this.doc.getText('content');
    content.insert(content.length, text.padEnd(payload, 'x'));
  }

  /** A frame of this document seen on NATS (the tap): the first sighting of each marker is a sample of group `tap`. */
  tapped(text: string, now: number): void {
    for (const match of text.matchAll(MARKER)) {
      const seq = Number(match[1]);
      const sentAt = this.sentAt.get(seq);
      if (sentAt === undefined || this.tappedSeqs.has(seq)) continue;
      this.tappedSeqs.add(seq);
      this.run.latencySample('tap', now - sentAt, sentAt);
    }
  }

  private readonly tappedSeqs = new Set<number>();

  private received(data: Buffer, group: string): void {
    const now = performance.now();
    const text = data.toString('latin1');
    for (const match of text.matchAll(MARKER)) {
      const seq = Number(match[1]);
      const sentAt = this.sentAt.get(seq);
      if (sentAt === undefined) continue;
      this.run.latencySample(group, now - sentAt, sentAt);
      const seen = (this.seen.get(seq) ?? 0) + 1;
      if (seen < this.spec.readers.length) {
        this.seen.set(seq, seen);
        continue;
      }
      this.seen.delete(seq);
      this.sentAt.delete(seq);
      this.inFlight--;
      this.run.completed(this, sentAt);
    }
  }

  close(): void {
    this.writer.terminate();
    for (const reader of this.readers) reader.terminate();
    this.doc.destroy();
  }
}

function opened(socket: WebSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
    socket.once('error', reject);
  });
}

class LoadRun {
  docs: DocLoad[] = [];
  closes = 0;
  private measuring: { from: number; to: number } | undefined;
  private delivered = 0;
  private readonly latency = new Map<string, Samples>();
  private mode: 'closed' | 'paced' = 'closed';
  private window = 1;
  private payload = 32;
  private stopped = false;

  async connect(docs: readonly LoadDoc[]): Promise<void> {
    // Writers first, one by one: a document's first socket claims its lease on the node it reaches.
    for (const spec of docs) {
      const load = new DocLoad(spec, this);
      this.docs.push(load);
      await opened(load.writer);
    }
    await Promise.all(this.docs.flatMap((load) => load.openReaders()));
  }

  latencySample(group: string, ms: number, sentAt: number): void {
    if (!this.inWindow(sentAt)) return;
    let samples = this.latency.get(group);
    if (samples === undefined) this.latency.set(group, (samples = new Samples()));
    samples.push(ms);
  }

  completed(load: DocLoad, sentAt: number): void {
    if (this.inWindow(sentAt)) this.delivered++;
    if (this.mode === 'closed' && !this.stopped) while (load.inFlight < this.window) load.send(this.payload);
  }

  private inWindow(sentAt: number): boolean {
    return this.measuring !== undefined && sentAt >= this.measuring.from && sentAt < this.measuring.to;
  }

  async run(command: Extract<LoadCommand, { type: 'run' }>): Promise<LoadResult> {
    this.mode = command.mode;
    this.window = command.window;
    this.payload = command.payload;
    const start = performance.now();
    this.measuring = { from: start + command.warmupMs, to: start + command.warmupMs + command.measureMs };
    let timer: NodeJS.Timeout | undefined;
    const probe = command.mode === 'paced' && command.natsProbeUrl !== undefined ? await NatsProbe.open(command.natsProbeUrl, this) : undefined;
    if (command.mode === 'closed') {
      for (const load of this.docs) while (load.inFlight < this.window) load.send(this.payload);
    } else {
      // Paced: every document sends `rate` updates a second, spread evenly over the documents.
      const tickMs = 1000 / command.rate / this.docs.length;
      let i = 0;
      timer = setInterval(() => {
        this.docs[i++ % this.docs.length]?.send(this.payload);
        probe?.send();
      }, tickMs);
    }
    await delay(command.warmupMs);
    const cpuBefore = process.cpuUsage();
    await delay(command.measureMs);
    const cpu = process.cpuUsage(cpuBefore);
    this.stopped = true;
    if (timer !== undefined) clearInterval(timer);
    // Let updates of the window arrive (bounded), then count what is still missing.
    const end = this.measuring.to;
    const drainUntil = performance.now() + 3000;
    while (performance.now() < drainUntil && this.pending(end) > 0) await delay(50);
    await probe?.close();
    const latency: Record<string, Summary> = {};
    for (const [group, samples] of this.latency) latency[group] = summarize(samples);
    return { delivered: this.delivered, measuredMs: command.measureMs, cpuMicros: cpu.user + cpu.system, latency, unfinished: this.pending(end), closes: this.closes };
  }

  private pending(before: number): number {
    let count = 0;
    for (const load of this.docs) for (const sentAt of load.sentAt.values()) if (sentAt >= (this.measuring?.from ?? 0) && sentAt < before) count++;
    return count;
  }

  close(): void {
    for (const load of this.docs) load.close();
  }
}

/**
 * The floor of what a relay can add: one message through nats-server between two connections of this process, at
 * the pace of the updates and under the same load. A relayed frame takes this hop plus the relaying node's turn.
 */
class NatsProbe {
  private constructor(private readonly pub: NatsConnection, private readonly sub: NatsConnection) {}

  static async open(url: string, run: LoadRun): Promise<NatsProbe> {
    const [pub, sub] = await Promise.all([connect({ servers: url }), connect({ servers: url })]);
    sub.subscribe('bench.probe', {
      callback: (error, msg) => {
        if (error !== null) return;
        const sentAt = new DataView(msg.data.buffer, msg.data.byteOffset, 8).getFloat64(0);
        run.latencySample('nats', performance.now() - sentAt, sentAt);
      },
    });
    // A tap on the owner's fan-out subjects (plait.topic.<base64url topic>): when a writer's update reached a NATS
    // subscriber, on this process's clock. Relaying reader minus tap = the relaying node's turn and its socket.
    const byDocument = new Map(run.docs.map((load) => [documentIdOf(load.spec.writerUrl), load]));
    sub.subscribe('plait.topic.>', {
      callback: (error, msg) => {
        if (error !== null) return;
        const now = performance.now();
        const topic = Buffer.from(msg.subject.slice('plait.topic.'.length), 'base64url').toString('latin1');
        const load = [...byDocument].find(([id]) => topic.includes(id))?.[1];
        if (load !== undefined) load.tapped(Buffer.from(msg.data).toString('latin1'), now);
      },
    });
    await sub.flush();
    return new NatsProbe(pub, sub);
  }

  send(): void {
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setFloat64(0, performance.now());
    this.pub.publish('bench.probe', bytes);
  }

  async close(): Promise<void> {
    await Promise.all([this.pub.close(), this.sub.close()]);
  }
}

/** `/sync/<organization>/<document>/...` → `"<document>"` as it stands in a topic name (quoted: latency-1 is not latency-10). */
function documentIdOf(url: string): string {
  return JSON.stringify(new URL(url).pathname.split('/')[3] ?? url);
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

if (process.send !== undefined) {
  const run = new LoadRun();
  const reply = (message: LoadReply): void => void process.send?.(message);
  process.on('message', (command: LoadCommand) => {
    const work = command.type === 'connect' ? run.connect(command.docs).then(() => reply({ type: 'connected' })) : run.run(command).then((result) => reply({ type: 'result', result }));
    work.catch((error: unknown) => reply({ type: 'failed', error: error instanceof Error ? error.message : String(error) }));
  });
  // The parent going away ends this process too.
  process.on('disconnect', () => {
    run.close();
    process.exit(0);
  });
}
