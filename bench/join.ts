// Owns the late-join benchmark: fresh clients joining a loaded ~1 MB document, server CPU per join and time to the full state.
import { performance } from 'node:perf_hooks';
import * as Y from 'yjs';
import { finish, flags, main, num, profileDir, reportProfiles, servers } from './lib/cli.js';
import { connectClient, connectMany, syncTarget, within, type SyncClient, type SyncTarget } from './lib/clients.js';
import { buildContent, docWith, whenLength, type Content } from './lib/content.js';
import { launchServer, SYNC_SERVERS, type ServerHandle, type ServerKind } from './lib/launch.js';
import { emit, isMain, medianOfRounds, progress, type Figure } from './lib/report.js';
import { median, round } from './lib/stats.js';

const USAGE = `node --import=tsx bench/join.ts [flags]
  --server plait,hocuspocus,y-websocket,floor   servers (default: all four, interleaved round by round)
  --bytes B           characters of the loaded document (default 1048576)
  --joins J           late joins per server per round, one after another (default 10)
  --rounds R          rounds; each runs J joins on every server in turn (default 3)
  --edits E           second row: the holder makes E small edits before each join (default 4; 0 skips the row)
  --profile           V8 CPU profile of the Plait server over the whole run (summary on stderr)`;

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

interface JoinRound {
  readonly cpuMicrosPerJoin: number;
  readonly systemMicrosPerJoin: number;
  readonly fullStateMs: number[];
}

const DOC = 'join-doc';

/** Starts a server and loads the document through a holder client (which stays, as a document's editors do). */
async function load(kind: ServerKind, content: Content, cpuProfileDir: string | undefined): Promise<Loaded> {
  const server = await launchServer(kind, kind === 'plait' && cpuProfileDir !== undefined ? { cpuProfileDir } : {});
  const target = await syncTarget(server);
  const [holder] = await connectMany(target, [DOC], { makeDoc: () => docWith(content), concurrency: 1 });
  if (holder === undefined) throw new Error('no holder');
  // The holder's own SyncStep2 (the whole content) reaches the server after its sync: one unmeasured join proves it arrived.
  await join(target, content.length);
  return { server, target, holder, length: content.length };
}

async function join(target: SyncTarget, length: number): Promise<number> {
  const start = performance.now();
  const client = connectClient(target, DOC, new Y.Doc());
  try {
    await within(whenLength(client.doc, length), JOIN_TIMEOUT_MS, `late join on port ${target.port}`);
    return performance.now() - start;
  } finally {
    client.destroy();
  }
}

const EDIT = 'edit ';

/**
 * J joins one after another, each after `edits` small edits by the holder (as in a document being worked on); server
 * CPU is read before and after (the closes are let in before the second reading), so it includes applying the edits.
 */
async function joinRound(loaded: Loaded, joins: number, edits: number): Promise<JoinRound> {
  const before = await loaded.server.stats();
  const fullStateMs: number[] = [];
  const text = loaded.holder.doc.getText('content');
  for (let i = 0; i < joins; i++) {
    for (let e = 0; e < edits; e++) text.insert((loaded.length * 7919 + e) % loaded.length, EDIT);
    loaded.length += edits * EDIT.length;
    fullStateMs.push(await join(loaded.target, loaded.length));
  }
  await sleep(100);
  const after = await loaded.server.stats();
  return { cpuMicrosPerJoin: (after.cpuMicros - before.cpuMicros) / joins, systemMicrosPerJoin: (after.systemMicros - before.systemMicros) / joins, fullStateMs };
}

export interface JoinOptions {
  readonly bytes: number;
  readonly joins: number;
  readonly rounds: number;
  /** Edits before each join in the second row (0: no second row). */
  readonly edits: number;
  readonly cpuProfileDir?: string;
}

/** Every server loaded at once; rounds interleave them (plait, hocuspocus, …, plait, …) so machine noise hits all alike. */
export async function runJoin(kinds: readonly ServerKind[], options: JoinOptions): Promise<Figure[]> {
  const content = buildContent(options.bytes, 64, 2);
  const size = options.bytes >= 1024 * 1024 ? `${round(options.bytes / (1024 * 1024), 2)} MB` : `${round(options.bytes / 1024, 1)} KB`;
  const rows = [{ bench: `late join, ${size} doc`, edits: 0 }, ...(options.edits > 0 ? [{ bench: `late join, ${size} doc, ${options.edits} edits before each`, edits: options.edits }] : [])];
  const loaded: Loaded[] = [];
  try {
    for (const kind of kinds) {
      progress(`join: loading ${options.bytes} B into ${kind}`);
      loaded.push(await load(kind, content, options.cpuProfileDir));
    }
    const rounds: Figure[][] = [];
    for (let r = 0; r < options.rounds; r++) {
      const figures: Figure[] = [];
      for (const { bench, edits } of rows) {
        for (const entry of loaded) {
          const result = await joinRound(entry, options.joins, edits);
          const kind = entry.server.kind;
          progress(`join round ${r + 1}, ${edits} edits: ${kind} ${Math.round(result.cpuMicrosPerJoin)} µs server CPU/join, full state p50 ${median(result.fullStateMs).toFixed(1)} ms`);
          const detail = { joins: options.joins, bytes: options.bytes, edits, fullStateMs: result.fullStateMs.map((ms) => round(ms, 2)) };
          figures.push(
            { bench, metric: 'server CPU / join', unit: 'µs', server: kind, value: result.cpuMicrosPerJoin, better: 'lower', detail },
            { bench, metric: 'server system CPU / join', unit: 'µs', server: kind, value: result.systemMicrosPerJoin, better: 'lower' },
            { bench, metric: 'time to full state p50', unit: 'ms', server: kind, value: median(result.fullStateMs), better: 'lower' },
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
    const values = flags(USAGE, { bytes: { type: 'string' }, joins: { type: 'string' }, rounds: { type: 'string' }, edits: { type: 'string' } });
    const options = {
      bytes: num(values, 'bytes', 1024 * 1024, 1024, 64 * 1024 * 1024),
      joins: num(values, 'joins', 10, 1, 10_000),
      rounds: num(values, 'rounds', 3, 1, 100),
      edits: num(values, 'edits', 4, 0, 1000),
    };
    const dir = profileDir(values);
    const figures = await runJoin(servers(values, SYNC_SERVERS), { ...options, ...(dir === undefined ? {} : { cpuProfileDir: dir }) });
    for (const figure of figures) emit(figure);
    reportProfiles(dir);
    finish(figures);
  });
}
