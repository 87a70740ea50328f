// Owns the late-join benchmark: fresh clients joining a loaded ~1 MB document, server CPU per join and time to the full state.
import { performance } from 'node:perf_hooks';
import * as Y from 'yjs';
import { finish, flags, main, num, plaitEnv, profileDir, reportProfiles, servers } from './lib/cli.js';
import { connectClient, connectMany, syncTarget, within, type SyncClient, type SyncTarget } from './lib/clients.js';
import { buildContent, docWith, whenLength, type Content } from './lib/content.js';
import { launchServer, SYNC_SERVERS, type ServerHandle, type ServerKind } from './lib/launch.js';
import { emit, isMain, medianOfRounds, progress, type Figure } from './lib/report.js';
import { median, round } from './lib/stats.js';

const USAGE = `node --import=tsx bench/join.ts [flags]
  --server plait,hocuspocus,y-websocket,floor   servers (default: all four, interleaved join by join)
  --bytes B           characters of the loaded document (default 1048576)
  --joins J           late joins per server per round (default 10)
  --rounds R          rounds; each runs J joins on every server in turn (default 3)
  --edits E           second row: the holder makes E small edits before each join (default 4; 0 skips the row)
  --profile           V8 CPU profile of the Plait server over the whole run (summary on stderr)
  --plait-env K=V,…   extra environment for the Plait server (e.g. JOIN_STATE_CACHE_BYTES=0 for the encode-per-join path)`;

const JOIN_TIMEOUT_MS = 60_000;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Loaded {
  readonly server: ServerHandle;
  readonly target: SyncTarget;
  /** Keeps the document loaded on servers that unload at the last disconnect; makes the edits of the edited row. */
  readonly holder: SyncClient;
  /** Characters of the document's text now (grows with the edits). */
  length: number;
}

interface JoinSample {
  readonly cpuMicros: number;
  readonly systemMicros: number;
  /** From the client's connect to the start of its first transaction (the state arriving): the server's share. */
  readonly stateMs: number;
  /** From the client's connect to the whole text in its doc (includes the client's own decode and apply). */
  readonly fullStateMs: number;
}

const DOC = 'join-doc';
const EDIT = 'edit ';
/** Lets the joiner's close reach the server before its CPU is read again (the close is part of a join's cost). */
const CLOSE_SETTLE_MS = 30;

/** Starts a server and loads the document through a holder client (which stays, as a document's editors do). */
async function load(kind: ServerKind, content: Content, options: JoinOptions): Promise<Loaded> {
  const plait = kind === 'plait';
  const server = await launchServer(kind, {
    ...(plait && options.cpuProfileDir !== undefined ? { cpuProfileDir: options.cpuProfileDir } : {}),
    ...(plait && options.plaitEnv !== undefined ? { env: options.plaitEnv } : {}),
  });
  const target = await syncTarget(server);
  const [holder] = await connectMany(target, [DOC], { makeDoc: () => docWith(content), concurrency: 1 });
  if (holder === undefined) throw new Error('no holder');
  const loaded = { server, target, holder, length: content.length };
  // The holder's own SyncStep2 (the whole content) reaches the server after its sync: one unmeasured join proves it arrived.
  await join(loaded, 0);
  return loaded;
}

/**
 * One late join, after `edits` small edits by the holder (a document being worked on); server CPU is read before
 * and after, so it includes applying the edits and the joiner's close.
 */
async function join(loaded: Loaded, edits: number): Promise<JoinSample> {
  const text = loaded.holder.doc.getText('content');
  for (let e = 0; e < edits; e++) text.insert((loaded.length * 7919 + e) % loaded.length, EDIT);
  loaded.length += edits * EDIT.length;
  const before = await loaded.server.stats();
  const start = performance.now();
  const doc = new Y.Doc();
  let stateAt = 0;
  doc.on('beforeTransaction', () => {
    if (stateAt === 0) stateAt = performance.now();
  });
  const client = connectClient(loaded.target, DOC, doc);
  let fullStateMs: number;
  try {
    await within(whenLength(client.doc, loaded.length), JOIN_TIMEOUT_MS, `late join on ${loaded.server.kind}`);
    fullStateMs = performance.now() - start;
  } finally {
    client.destroy();
  }
  await sleep(CLOSE_SETTLE_MS);
  const after = await loaded.server.stats();
  return { cpuMicros: after.cpuMicros - before.cpuMicros, systemMicros: after.systemMicros - before.systemMicros, stateMs: stateAt - start, fullStateMs };
}

export interface JoinOptions {
  readonly bytes: number;
  readonly joins: number;
  readonly rounds: number;
  /** Edits before each join in the second row (0: no second row). */
  readonly edits: number;
  readonly cpuProfileDir?: string;
  readonly plaitEnv?: Readonly<Record<string, string>>;
}

const mean = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0) / values.length;

/**
 * Every server loaded at once; the joins interleave them one by one (plait, hocuspocus, y-websocket, floor, plait, …)
 * so the machine's noise hits all alike. A round is J joins on each server; the figures are medians of the rounds.
 */
export async function runJoin(kinds: readonly ServerKind[], options: JoinOptions): Promise<Figure[]> {
  const content = buildContent(options.bytes, 64, 2);
  const size = options.bytes >= 1024 * 1024 ? `${round(options.bytes / (1024 * 1024), 2)} MB` : `${round(options.bytes / 1024, 1)} KB`;
  const rows = [{ bench: `late join, ${size} doc`, edits: 0 }, ...(options.edits > 0 ? [{ bench: `late join, ${size} doc, ${options.edits} edits before each`, edits: options.edits }] : [])];
  const loaded: Loaded[] = [];
  try {
    for (const kind of kinds) {
      progress(`join: loading ${options.bytes} B into ${kind}`);
      loaded.push(await load(kind, content, options));
    }
    const rounds: Figure[][] = [];
    for (let r = 0; r < options.rounds; r++) {
      const figures: Figure[] = [];
      for (const { bench, edits } of rows) {
        const samples = loaded.map(() => [] as JoinSample[]);
        for (let j = 0; j < options.joins; j++) {
          for (const [i, entry] of loaded.entries()) samples[i]?.push(await join(entry, edits));
        }
        for (const [i, entry] of loaded.entries()) {
          const got = samples[i] ?? [];
          const kind = entry.server.kind;
          const cpu = mean(got.map((s) => s.cpuMicros));
          const full = got.map((s) => s.fullStateMs);
          progress(`join round ${r + 1}, ${edits} edits: ${kind} ${Math.round(cpu)} µs server CPU/join, state arrives p50 ${median(got.map((s) => s.stateMs)).toFixed(1)} ms, full state p50 ${median(full).toFixed(1)} ms`);
          const detail = { joins: options.joins, bytes: options.bytes, edits, cpuMicros: got.map((s) => Math.round(s.cpuMicros)), fullStateMs: full.map((ms) => round(ms, 2)) };
          figures.push(
            { bench, metric: 'server CPU / join', unit: 'µs', server: kind, value: cpu, better: 'lower', detail },
            { bench, metric: 'server system CPU / join', unit: 'µs', server: kind, value: mean(got.map((s) => s.systemMicros)), better: 'lower' },
            { bench, metric: 'state arrives p50', unit: 'ms', server: kind, value: median(got.map((s) => s.stateMs)), better: 'lower' },
            { bench, metric: 'time to full state p50', unit: 'ms', server: kind, value: median(full), better: 'lower' },
          );
        }
      }
      rounds.push(figures);
    }
    return medianOfRounds(rounds);
  } finally {
    for (const entry of loaded) {
      entry.holder.destroy();
      await entry.server.stop();
    }
  }
}

if (isMain(import.meta.url)) {
  main(async () => {
    const values = flags(USAGE, { bytes: { type: 'string' }, joins: { type: 'string' }, rounds: { type: 'string' }, edits: { type: 'string' }, 'plait-env': { type: 'string' } });
    const env = plaitEnv(values);
    const options = {
      bytes: num(values, 'bytes', 1024 * 1024, 1024, 64 * 1024 * 1024),
      joins: num(values, 'joins', 10, 1, 10_000),
      rounds: num(values, 'rounds', 3, 1, 100),
      edits: num(values, 'edits', 4, 0, 1000),
    };
    const dir = profileDir(values);
    const figures = await runJoin(servers(values, SYNC_SERVERS), { ...options, ...(dir === undefined ? {} : { cpuProfileDir: dir }), ...(env === undefined ? {} : { plaitEnv: env }) });
    for (const figure of figures) emit(figure);
    reportProfiles(dir);
    finish(figures);
  });
}
