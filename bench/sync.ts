// Owns the self-contained sync benchmark: N y-websocket clients on M documents against Plait; fan-out latency, rate, memory.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { loadConfig } from '../src/config.js';
import { DocumentActors } from '../src/doc/registry.js';
import { createLogger } from '../src/log.js';
import { Store } from '../src/store/env.js';

export interface SyncBenchOptions {
  /** y-websocket clients, spread round-robin over the documents; each both writes and receives. */
  readonly clients: number;
  readonly docs: number;
  /** Updates each client sends. */
  readonly updates: number;
  /** Pause between one client's updates (fixed rate per client). */
  readonly intervalMs: number;
  readonly persistence: boolean;
  readonly groupCommitMs: number;
  /** Documents loaded (in-process, no sockets) to measure memory per loaded document, and their text length. */
  readonly memoryDocs: number;
  readonly docChars: number;
  /** Called with each JSON line (default: stdout). */
  readonly print?: (line: string) => void;
}

export interface SyncBenchResult {
  readonly clients: number;
  readonly docs: number;
  readonly updatesSent: number;
  readonly deliveries: number;
  readonly durationMs: number;
  readonly updatesPerSec: number;
  readonly deliveriesPerSec: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly memoryPerDocBytes: number;
}

export const DEFAULTS: SyncBenchOptions = { clients: 40, docs: 8, updates: 200, intervalMs: 20, persistence: true, groupCommitMs: 2, memoryDocs: 500, docChars: 2000 };

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

/** Starts src/main.ts in a child (the server gets its own event loop, as in production); resolves with its port. */
async function startChild(dataDir: string, options: SyncBenchOptions): Promise<{ port: number; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, ['--import=tsx', MAIN], {
    env: { ...process.env, PORT: '0', DATA_DIR: dataDir, DEV_BOOTSTRAP: 'false', LOG_LEVEL: 'info', PERSISTENCE: String(options.persistence), GROUP_COMMIT_MS: String(options.groupCommitMs) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (match?.[1] !== undefined) resolve(Number(match[1]));
    });
    void exited.then(() => reject(new Error('the server exited before it was ready')));
  });
  return {
    port,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function post<T>(base: string, path: string, data: unknown, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ data }) });
  const body = (await response.json()) as { result?: { data: T }; error?: unknown };
  if (body.result === undefined) throw new Error(`${path} failed: ${JSON.stringify(body.error)}`);
  return body.result.data;
}

/** A workspace, its API key and a user token with editor access to the organization. */
async function credentials(base: string): Promise<{ token: string }> {
  const workspace = await post<{ id: string; authToken: string; apiKeyList: Record<string, unknown> }>(base, '/v2/workspace/create', { ownerEmail: `bench-${process.pid}@example.com` });
  const apiKey = Object.keys(workspace.apiKeyList)[0] ?? '';
  const tokens = await post<{ authTokens: Array<{ token: string }> }>(base, '/v2/workspace/authtokens/get', { apiKey }, { 'x-svc-workspace-id': workspace.id, 'x-svc-workspace-auth-token': workspace.authToken });
  const headers = { 'x-svc-api-key': apiKey, 'x-svc-auth-token': tokens.authTokens[0]?.token ?? '' };
  const { token } = await post<{ token: string }>(base, '/v2/auth/generate_token', { userId: 'bench', userProperties: { name: 'Bench', email: 'bench@example.com' }, permissions: { resources: [{ type: 'organization', id: 'bench-org' }] } }, headers);
  return { token };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN);
}

/** Heap of M loaded document actors (text content + awareness), measured in-process around a forced GC when available. */
async function memoryPerDoc(options: SyncBenchOptions): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'plait-bench-mem-'));
  const store = Store.open(dir);
  const registry = new DocumentActors(loadConfig({}, [], { dataDir: dir, persistence: false, docIdleUnloadMs: 3_600_000 }), store, createLogger('silent'), { publish: () => undefined });
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const text = 'lorem ipsum '.repeat(Math.ceil(options.docChars / 12)).slice(0, options.docChars);
  for (let i = 0; i < options.memoryDocs; i++) {
    await registry.use({ apiKey: 'k', organizationId: 'o', documentId: `d${i}` }, (actor) => actor.add('main', { type: 'text', data: text }));
  }
  gc?.();
  const perDoc = (process.memoryUsage().heapUsed - before) / options.memoryDocs;
  await registry.shutdown();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return Math.round(perDoc);
}

export async function runSyncBench(partial: Partial<SyncBenchOptions> = {}): Promise<SyncBenchResult> {
  const options: SyncBenchOptions = { ...DEFAULTS, ...partial };
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const memoryPerDocBytes = await memoryPerDoc(options);
  print(JSON.stringify({ phase: 'memory', docs: options.memoryDocs, docChars: options.docChars, memoryPerDocBytes, gcForced: typeof (globalThis as { gc?: unknown }).gc === 'function' }));

  // y-websocket adds a process 'exit' listener per provider.
  process.setMaxListeners(options.clients + 16);
  const dataDir = mkdtempSync(join(tmpdir(), 'plait-bench-sync-'));
  const server = await startChild(dataDir, options);
  const base = `http://127.0.0.1:${server.port}`;
  const { token } = await credentials(base);
  const latencies: number[] = [];
  const clients = Array.from({ length: options.clients }, (_, i) => {
    const doc = new Y.Doc();
    const provider = new WebsocketProvider(`ws://127.0.0.1:${server.port}/sync`, `bench-org/doc-${i % options.docs}/main`, doc, {
      WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
      disableBc: true,
      params: { token, type: 'map' },
    });
    const beats = doc.getMap<{ seq: number; at: number }>('content');
    const seen = new Map<string, number>();
    beats.observe((event) => {
      if (event.transaction.local) return;
      const now = performance.now();
      for (const key of event.keysChanged) {
        const beat = beats.get(key);
        if (beat === undefined) continue;
        latencies.push(now - beat.at);
        seen.set(key, beat.seq);
      }
    });
    return { index: i, doc, provider, beats, seen };
  });
  await Promise.all(
    clients.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.provider.synced) return resolve();
          const onSync = (state: boolean): void => {
            if (!state) return;
            c.provider.off('sync', onSync);
            resolve();
          };
          c.provider.on('sync', onSync);
        }),
    ),
  );

  // Every client beats at a fixed rate; a receiver records now - sentAt for each beat it observes.
  const started = performance.now();
  await Promise.all(
    clients.map(
      (client) =>
        new Promise<void>((resolve) => {
          let seq = 0;
          const timer = setInterval(() => {
            client.beats.set(`c${client.index}`, { seq: ++seq, at: performance.now() });
            if (seq < options.updates) return;
            clearInterval(timer);
            resolve();
          }, options.intervalMs);
        }),
    ),
  );
  // Wait (on events) until every client saw the last beat of every other client of its document.
  const peersOf = (client: (typeof clients)[number]) => clients.filter((o) => o !== client && o.index % options.docs === client.index % options.docs);
  await Promise.all(
    clients.map(
      (client) =>
        new Promise<void>((resolve) => {
          const done = (): boolean => peersOf(client).every((peer) => client.seen.get(`c${peer.index}`) === options.updates);
          if (done()) return resolve();
          const check = (): void => {
            if (!done()) return;
            client.beats.unobserveDeep(check);
            resolve();
          };
          client.beats.observeDeep(check);
        }),
    ),
  );
  const durationMs = performance.now() - started;
  for (const client of clients) client.provider.destroy();
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });

  latencies.sort((a, b) => a - b);
  const updatesSent = options.clients * options.updates;
  const round = (n: number): number => Math.round(n * 100) / 100;
  const result: SyncBenchResult = {
    clients: options.clients,
    docs: options.docs,
    updatesSent,
    deliveries: latencies.length,
    durationMs: Math.round(durationMs),
    updatesPerSec: Math.round((updatesSent / durationMs) * 1000),
    deliveriesPerSec: Math.round((latencies.length / durationMs) * 1000),
    latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), max: round(latencies.at(-1) ?? Number.NaN) },
    memoryPerDocBytes,
  };
  print(JSON.stringify({ phase: 'sync', persistence: options.persistence, intervalMs: options.intervalMs, ...result }));
  return result;
}

function summary(result: SyncBenchResult): string {
  const rows: Array<[string, string]> = [
    ['clients / documents', `${result.clients} / ${result.docs}`],
    ['updates sent', String(result.updatesSent)],
    ['deliveries (fan-out)', String(result.deliveries)],
    ['updates/s', String(result.updatesPerSec)],
    ['deliveries/s', String(result.deliveriesPerSec)],
    ['fan-out latency p50', `${result.latencyMs.p50} ms`],
    ['fan-out latency p99', `${result.latencyMs.p99} ms`],
    ['memory per loaded document', `${(result.memoryPerDocBytes / 1024).toFixed(1)} KiB (heap, text of the configured size)`],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  return rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({
    options: {
      clients: { type: 'string' },
      docs: { type: 'string' },
      updates: { type: 'string' },
      'interval-ms': { type: 'string' },
      'group-commit-ms': { type: 'string' },
      'doc-chars': { type: 'string' },
      'memory-docs': { type: 'string' },
      'no-persistence': { type: 'boolean' },
    },
  });
  const num = (raw: string | undefined, fallback: number): number => (raw === undefined ? fallback : Number(raw));
  runSyncBench({
    clients: num(values.clients, DEFAULTS.clients),
    docs: num(values.docs, DEFAULTS.docs),
    updates: num(values.updates, DEFAULTS.updates),
    intervalMs: num(values['interval-ms'], DEFAULTS.intervalMs),
    groupCommitMs: num(values['group-commit-ms'], DEFAULTS.groupCommitMs),
    docChars: num(values['doc-chars'], DEFAULTS.docChars),
    memoryDocs: num(values['memory-docs'], DEFAULTS.memoryDocs),
    persistence: values['no-persistence'] !== true,
  }).then(
    (result) => process.stdout.write(`\n${summary(result)}\n`),
    (error: unknown) => {
      process.stderr.write(`${String((error as Error).stack ?? error)}\n`);
      process.exit(1);
    },
  );
}
