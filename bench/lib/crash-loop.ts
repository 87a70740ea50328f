// Owns the crash-restart loop: mixed REST and sync load on src/main.ts, SIGKILL at random moments, then a check that nothing acknowledged was lost.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const READY = /listening on http:\/\/[^:]+:(\d+)/;

export interface CrashLoopOptions {
  readonly dataDir: string;
  readonly kills: number;
  /** The load runs this long at most before the kill; the kill comes at a random moment within it. */
  readonly maxLoadMs: number;
  /** Deterministic randomness for the kill moments. */
  readonly seed: number;
  readonly progress?: (line: string) => void;
  /** Node arguments that start the server; default: src/main.ts under tsx (the bench passes the built dist/). */
  readonly serverArgs?: readonly string[];
}

export interface CrashLoopResult {
  readonly kills: number;
  readonly ackedRest: number;
  readonly ackedComments: number;
  /** Characters of synced text acknowledged as committed (a REST write answered after the peers had them). */
  readonly ackedSyncChars: number;
  readonly lostRest: string[];
  readonly lostComments: string[];
  /** Checks in which the restarted server's text did not start with the acknowledged text. */
  readonly lostSync: number;
  readonly elapsedMs: number;
}

interface Running {
  readonly port: number;
  readonly exited: Promise<unknown>;
  kill(): void;
}

async function start(dataDir: string, args: readonly string[]): Promise<Running> {
  const child = spawn(process.execPath, [...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', PORT: '0', DATA_DIR: dataDir, DEV_BOOTSTRAP: 'false', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise((resolve) =>
    child.on('exit', (code) => {
      // Its pipes may stay open a moment longer; nothing more is read from a dead server.
      child.stdout.destroy();
      child.stderr.destroy();
      resolve(code);
    }),
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = READY.exec(stdout);
      if (match?.[1] !== undefined) resolve(Number(match[1]));
    });
    void exited.then(() => reject(new Error(`server exited before it was ready: ${stderr}`)));
  });
  return { port, exited, kill: () => child.kill('SIGKILL') };
}

/** mulberry32: small seeded generator, so a run's kill moments can be repeated. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

interface Credentials {
  readonly apiKey: string;
  readonly authToken: string;
}

async function post(base: string, path: string, data: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: { result?: { data?: unknown; nextPageToken?: string } } }> {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ data }) });
  return { status: response.status, body: (await response.json()) as { result?: { data?: unknown; nextPageToken?: string } } };
}

/** Every thread id of the document, page after page (Get Comment Annotations answers 1000 at a time). */
async function threadIds(base: string, headers: Record<string, string>): Promise<Set<string>> {
  const ids = new Set<string>();
  let pageToken: string | undefined;
  do {
    const page = await post(base, '/v2/commentannotations/get', { ...DOC, ...(pageToken === undefined ? {} : { pageToken }) }, headers);
    if (page.status !== 200) throw new Error(`commentannotations/get answered ${page.status}`);
    for (const row of (page.body.result?.data ?? []) as Array<{ annotationId: string }>) ids.add(row.annotationId);
    pageToken = page.body.result?.nextPageToken;
  } while (pageToken !== undefined);
  return ids;
}

async function workspace(base: string): Promise<Credentials & { token: string }> {
  const created = await post(base, '/v2/workspace/create', { ownerEmail: `crash-${Date.now()}@example.com` });
  const data = created.body.result?.data as { id: string; authToken: string; apiKeyList: Record<string, unknown> };
  const apiKey = Object.keys(data.apiKeyList)[0] as string;
  const tokens = await post(base, '/v2/workspace/authtokens/get', { apiKey }, { 'x-svc-workspace-id': data.id, 'x-svc-workspace-auth-token': data.authToken });
  const authToken = (tokens.body.result?.data as { authTokens: Array<{ token: string }> }).authTokens[0]?.token as string;
  const headers = { 'x-svc-api-key': apiKey, 'x-svc-auth-token': authToken };
  const user = await post(base, '/v2/auth/generate_token', { userId: 'crash', userProperties: { name: 'c', email: 'c@example.com' }, permissions: { resources: [] } }, headers);
  return { apiKey, authToken, token: (user.body.result?.data as { token: string }).token };
}

const DOC = { organizationId: 'crash-org', documentId: 'crash-doc' };

function provider(base: string, doc: Y.Doc, token: string): WebsocketProvider {
  return new WebsocketProvider(`${base.replace(/^http/, 'ws')}/sync`, `${DOC.organizationId}/${DOC.documentId}/text`, doc, {
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    disableBc: true,
    params: { token },
  });
}

function whenSynced(p: WebsocketProvider): Promise<void> {
  return p.synced ? Promise.resolve() : new Promise((resolve) => p.once('sync', () => resolve()));
}

/**
 * Runs `kills` cycles: start the server, check everything acknowledged so far is there, run REST writers (CRDT
 * adds, comment threads) and a sync writer with an observer for a random time, SIGKILL the server mid-load.
 */
export async function runCrashLoop(options: CrashLoopOptions): Promise<CrashLoopResult> {
  const began = Date.now();
  const rand = random(options.seed);
  const ackedStores = new Map<string, string>();
  const ackedThreads = new Set<string>();
  let ackedText = '';
  const lostRest: string[] = [];
  const lostComments: string[] = [];
  let lostSync = 0;
  let credentials: (Credentials & { token: string }) | undefined;
  let counter = 0;

  for (let cycle = 0; cycle <= options.kills; cycle++) {
    const startedAt = Date.now();
    const server = await start(options.dataDir, options.serverArgs ?? ['--import=tsx', MAIN]);
    const startMs = Date.now() - startedAt;
    const base = `http://127.0.0.1:${server.port}`;
    credentials ??= await workspace(base);
    const headers = { 'x-svc-api-key': credentials.apiKey, 'x-svc-auth-token': credentials.authToken };

    // Check: everything acknowledged before the last kill is there.
    const stores = await post(base, '/v2/crdt/get', DOC, headers);
    const found = new Map(((stores.body.result?.data ?? []) as Array<{ id: string; data: unknown }>).map((record) => [record.id, record.data]));
    for (const [editorId, data] of ackedStores) if (found.get(editorId) !== data) lostRest.push(editorId);
    const present = await threadIds(base, headers);
    for (const id of ackedThreads) if (!present.has(id)) lostComments.push(id);
    const checkDoc = new Y.Doc();
    const checker = provider(base, checkDoc, credentials.token);
    await whenSynced(checker);
    if (!checkDoc.getText('content').toString().startsWith(ackedText)) lostSync++;
    checker.destroy();
    options.progress?.(`cycle ${cycle} (start ${startMs} ms, check ${Date.now() - startedAt - startMs} ms): ${ackedStores.size} stores, ${ackedThreads.size} threads, ${ackedText.length} chars acknowledged; lost so far ${lostRest.length + lostComments.length + lostSync}`);
    if (cycle === options.kills) {
      server.kill();
      await server.exited;
      break;
    }

    // Load until the kill.
    let alive = true;
    let restAcked = false;
    let syncAcked = false;
    let loadReady: () => void = () => undefined;
    const bothAcked = new Promise<void>((resolve) => (loadReady = resolve));
    const acked = (): void => {
      if (restAcked && syncAcked) loadReady();
    };
    const writerDoc = new Y.Doc();
    const observerDoc = new Y.Doc();
    const writer = provider(base, writerDoc, credentials.token);
    const observer = provider(base, observerDoc, credentials.token);
    await Promise.all([whenSynced(writer), whenSynced(observer)]);
    const restWriter = async (): Promise<void> => {
      while (alive) {
        const id = `s${cycle}-${counter++}`;
        try {
          const added = await post(base, '/v2/crdt/add', { ...DOC, editorId: id, type: 'text', data: `v-${id}` }, headers);
          if (added.status === 200) ackedStores.set(id, `v-${id}`);
          const thread = await post(base, '/v2/commentannotations/add', { ...DOC, commentAnnotations: [{ annotationId: `t-${id}`, commentData: [{ commentText: id, from: { userId: 'crash' } }] }] }, headers);
          if (thread.status === 200) ackedThreads.add(`t-${id}`);
          restAcked = true;
          acked();
        } catch {
          // The server died with this request in flight: it was never acknowledged.
          return;
        }
      }
    };
    const syncWriter = async (): Promise<void> => {
      const text = writerDoc.getText('content');
      while (alive) {
        text.insert(text.length, `${cycle}.${counter++};`);
        // What the observer holds went through the server; a REST write answered after it means it is committed.
        const seen = observerDoc.getText('content').toString();
        try {
          const marker = await post(base, '/v2/crdt/update', { ...DOC, editorId: 'marker', type: 'text', data: String(counter) }, headers);
          if (marker.status === 404) await post(base, '/v2/crdt/add', { ...DOC, editorId: 'marker', type: 'text', data: String(counter) }, headers);
          else if (marker.status === 200 && seen.length > ackedText.length) {
            ackedText = seen;
            syncAcked = true;
            acked();
          }
        } catch {
          return;
        }
      }
    };
    const loads = [restWriter(), restWriter(), restWriter(), restWriter(), syncWriter()];
    // The kill comes at a random moment after the load is under way (both kinds acknowledged once), so every cycle
    // kills the server with writes in flight rather than while it warms up.
    let warmup: NodeJS.Timeout | undefined;
    await Promise.race([bothAcked, new Promise((resolve) => (warmup = setTimeout(resolve, 10_000)))]);
    clearTimeout(warmup);
    const killAfter = Math.floor(rand() * options.maxLoadMs);
    await new Promise((resolve) => setTimeout(resolve, killAfter));
    server.kill();
    await server.exited;
    alive = false;
    await Promise.all(loads);
    writer.destroy();
    observer.destroy();
  }
  return {
    kills: options.kills,
    ackedRest: ackedStores.size,
    ackedComments: ackedThreads.size,
    ackedSyncChars: ackedText.length,
    lostRest,
    lostComments,
    lostSync,
    elapsedMs: Date.now() - began,
  };
}
