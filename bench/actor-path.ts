// Owns the in-process fan-out path benchmark: JS CPU per client update, the floor's apply vs Plait's actor (fake sockets, real LMDB log).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { FakeHub, FakePeer } from '../test/helpers/fake-peer.js';

const USAGE = `node --import=tsx bench/actor-path.ts [flags]
  --updates N     updates per measured round (default 3000)
  --per-turn K    updates per event-loop turn: 1 is the paced case, more is a burst (default 1)
  --rounds R      rounds of each path, interleaved; the minimum is printed (default 5)
  --paths P,…     which of floor, plait, plait-nopersist to run (default all three)
  --dist DIR      run Plait from another build (a copy of dist/ inside a checkout, e.g. a build of main) instead of
                  compiling this tree: run once per build, alternated, for a before/after
What it measures: process CPU per update of the server-side JavaScript alone (no sockets: a fake hub records
frames), for the floor's path (decode, apply once) and Plait's (the edge's per-frame checks of the API key's
bytes and sync messages, validate, actor mailbox with the key's CPU share, apply, update log with group commit,
per-turn fan-out), with the log and without (PERSISTENCE=false). Kernel and uWS work per delivery are not in it:
bench/fanout.ts measures those, from outside.`;

const { values } = parseArgs({ options: { updates: { type: 'string' }, 'per-turn': { type: 'string' }, rounds: { type: 'string' }, paths: { type: 'string' }, dist: { type: 'string' }, help: { type: 'boolean' } } });
if (values.help === true) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const updates = Number(values.updates ?? 3000);
const perTurn = Number(values['per-turn'] ?? 1);
const rounds = Number(values.rounds ?? 5);
const paths = new Set((values.paths ?? 'floor,plait,plait-nopersist').split(','));

// The compiled build, as the other benches run Plait (tsx would wrap every named closure).
const ROOT = fileURLToPath(new URL('../', import.meta.url));
if (values.dist === undefined) execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
const distRoot = values.dist === undefined ? new URL('../dist/', import.meta.url) : pathToFileURL(`${resolve(values.dist)}/`);
const dist = (path: string): string => new URL(`src/${path}`, distRoot).href;
const { loadConfig } = (await import(dist('config.js'))) as typeof import('../src/config.js');
const { DocumentActors } = (await import(dist('doc/registry.js'))) as typeof import('../src/doc/registry.js');
const { createLogger } = (await import(dist('log.js'))) as typeof import('../src/log.js');
const { Store } = (await import(dist('store/env.js'))) as typeof import('../src/store/env.js');
const { readClientMessage, writeUpdate } = (await import(dist('sync/protocol.js'))) as typeof import('../src/sync/protocol.js');
const { rateLimits } = (await import(dist('http/rate-limit.js'))) as typeof import('../src/http/rate-limit.js');

/**
 * The edge's per-frame checks (src/ws/behavior.ts): the API key's bytes and sync messages, at the defaults but with
 * limits no run reaches, as the bench host sets them; a hundred other keys in the buckets. A build from before the
 * message limit (a4083dd) has no `syncMessages`: only the bytes are checked there.
 */
const limits = rateLimits({ ...loadConfig({}, [], {}), apiKeyBytesPerSecond: 1024 ** 4, apiKeySyncMessagesPerSecond: 1_000_000_000 });
const syncMessages = limits.syncMessages as typeof limits.syncMessages | undefined;
for (let k = 0; k < 100; k++) {
  limits.bytes.charge(`key-${k}`, 1);
  syncMessages?.tryTake(`key-${k}`);
}

/** The fan-out bench's writer: 32 characters appended and a sequence number set, one transaction each. */
const frames: Uint8Array[] = [];
const source = new Y.Doc();
source.on('update', (update: Uint8Array) => frames.push(writeUpdate(update)));
const warmup = 500;
for (let i = 0; i < updates + warmup; i++) {
  source.transact(() => {
    source.getText('content').insert(source.getText('content').length, 'abcdefghijklmnopqrstuvwxyz012345');
    source.getMap('seq').set('n', i);
  });
}
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function measure(step: () => void, afterTurn: () => void): Promise<number> {
  for (let i = 0; i < warmup; i++) {
    step();
    if (i % perTurn === perTurn - 1) await turn();
  }
  await turn();
  afterTurn();
  const before = process.cpuUsage();
  for (let i = 0; i < updates / perTurn; i++) {
    for (let j = 0; j < perTurn; j++) step();
    await turn();
    afterTurn();
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / updates;
}

function floor(): Promise<number> {
  const doc = new Y.Doc();
  let next = 0;
  return measure(
    () => {
      const bytes = new Uint8Array(frames[next++] as Uint8Array);
      const decoder = decoding.createDecoder(bytes);
      decoding.readVarUint(decoder);
      const reply = encoding.createEncoder();
      encoding.writeVarUint(reply, 0);
      syncProtocol.readSyncMessage(decoder, reply, doc, null);
    },
    () => undefined,
  );
}

async function plait(persistence: boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'plait-bench-path-'));
  const store = Store.open(dir);
  const hub = new FakeHub();
  const registry = new DocumentActors(loadConfig({}, [], { dataDir: dir, persistence }), store, createLogger('silent'), hub);
  const lease = await registry.acquire({ apiKey: 'k', organizationId: 'o', documentId: 'd' });
  const writer = new FakePeer('w', 'u', 'main', hub);
  const reader = new FakePeer('r', 'u', 'main', hub);
  lease.actor.attach(writer);
  lease.actor.attach(reader);
  await lease.actor.run(() => undefined);
  let next = 0;
  try {
    return await measure(
      // As the WebSocket edge does: copy the frame (uWS reuses its buffer), validate, hand it to the actor.
      () => {
        const bytes = (frames[next++] as Uint8Array).slice();
        if (limits.bytes.charge('k', bytes.length) > 0 || (syncMessages?.tryTake('k') ?? 0) > 0) throw new Error('a limit was reached');
        void lease.actor.receive(writer, readClientMessage(bytes));
      },
      () => {
        reader.frames.length = 0;
      },
    );
  } finally {
    lease.release();
    await registry.shutdown();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const best = new Map<string, number>();
for (let r = 0; r < rounds; r++) {
  for (const [name, run] of [
    ['floor', () => floor()],
    ['plait', () => plait(true)],
    ['plait-nopersist', () => plait(false)],
  ] as const) {
    if (!paths.has(name)) continue;
    const micros = await run();
    best.set(name, Math.min(best.get(name) ?? Number.POSITIVE_INFINITY, micros));
  }
}
for (const [name, micros] of best) process.stdout.write(`${name.padEnd(16)} ${micros.toFixed(1)} µs CPU per update (min of ${rounds} rounds, ${perTurn} per turn)\n`);
