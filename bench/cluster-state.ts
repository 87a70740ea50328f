// Owns the state-log benchmark: what the JetStream acknowledgement adds to a write, the bytes per message, and how fast a node rebuilds its cache.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'nats';
import { ClusterState, STATE_STREAM } from '../src/cluster/state.js';
import { createLogger } from '../src/log.js';
import { Store } from '../src/store/env.js';
import { DB } from '../src/store/keys.js';
import { flags, main, num } from './lib/cli.js';
import { percentile, round } from './lib/stats.js';

const USAGE = `node --import=tsx bench/cluster-state.ts [flags]
  --writes N     sequential transactions per variant (default 2000)
  --value B      bytes of the value each transaction writes (default 200)
  --keys K       distinct keys the writes cycle over (default 100; the checkpoint holds K rows)
  --nats PATH    the nats-server binary (default /usr/sbin/nats-server)`;

async function startNats(bin: string, dir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(bin, ['-js', '-a', '127.0.0.1', '-p', '-1', '-sd', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Listening for client connections on ([\d.]+):(\d+)/.exec(output);
      if (match !== null) resolve(`nats://127.0.0.1:${match[2]}`);
    });
    child.on('exit', () => reject(new Error(`nats-server exited: ${output}`)));
  });
  return { url, child };
}

/** Latencies (ms) of `writes` sequential one-put transactions. */
async function writeLatencies(store: Store, writes: number, value: string, keys: number): Promise<number[]> {
  const db = store.records<{ v: string; i: number }>(DB.domains);
  const samples: number[] = [];
  for (let i = 0; i < writes; i++) {
    const started = performance.now();
    await store.transaction(() => void db.put([`key-${i % keys}`], { v: value, i }));
    samples.push(performance.now() - started);
  }
  return samples.sort((a, b) => a - b);
}

main(async () => {
  const values = flags(USAGE, { writes: { type: 'string' }, value: { type: 'string' }, keys: { type: 'string' }, nats: { type: 'string' } });
  const keys = num(values, 'keys', 100, 1, 10_000_000);
  const writes = num(values, 'writes', 2000, 10, 1_000_000);
  const valueBytes = num(values, 'value', 200, 1, 10_000_000);
  const bin = typeof values['nats'] === 'string' ? values['nats'] : '/usr/sbin/nats-server';
  const dir = mkdtempSync(join(tmpdir(), 'plait-bench-state-'));
  const nats = await startNats(bin, join(dir, 'nats'));
  const value = 'x'.repeat(valueBytes);
  const rows: Array<[string, string]> = [];
  try {
    const local = Store.open(join(dir, 'local'));
    const plain = await writeLatencies(local, writes, value, keys);
    await local.close();

    const nc = await connect({ servers: nats.url });
    const log = createLogger('silent');
    const state = await ClusterState.open(nc, { nodeId: 'bench', log });
    const store = Store.open(join(dir, 'a'), { replication: state });
    await state.attach(store);
    const replicated = await writeLatencies(store, writes, value, keys);
    const info = await (await nc.jetstreamManager()).streams.info(STATE_STREAM);

    // A second node rebuilding its cache from the whole stream.
    const rebuildState = await ClusterState.open(nc, { nodeId: 'rebuild', log });
    const rebuilt = Store.open(join(dir, 'b'), { replication: rebuildState });
    const started = performance.now();
    await rebuildState.attach(rebuilt);
    const rebuildMs = performance.now() - started;
    await rebuildState.close();
    await rebuilt.close();

    // Compaction on the first node (a checkpoint at the last sequence, the stream purged), then a third node rebuilding
    // from the checkpoint and the (empty) rest of the stream.
    const checkpoint = await state.compactor?.compact();
    const checkpointState = await ClusterState.open(nc, { nodeId: 'from-checkpoint', log });
    const fromCheckpoint = Store.open(join(dir, 'c'), { replication: checkpointState });
    const startedCheckpoint = performance.now();
    await checkpointState.attach(fromCheckpoint);
    const checkpointRebuildMs = performance.now() - startedCheckpoint;
    await checkpointState.close();
    await fromCheckpoint.close();
    await state.close();
    await store.close();
    await nc.close();

    const row = (name: string, samples: number[]): void => {
      rows.push([`${name} p50 / p99 (ms)`, `${round(percentile(samples, 50))} / ${round(percentile(samples, 99))}`]);
    };
    row('write, LMDB only', plain);
    row('write, LMDB + stream ack', replicated);
    rows.push(['stream bytes per write (incl. overhead)', String(round(info.state.bytes / info.state.messages, 1))]);
    rows.push([`rebuild of ${info.state.messages} messages`, `${round(rebuildMs, 0)} ms (${round((info.state.messages / rebuildMs) * 1000, 0)} msg/s)`]);
    if (checkpoint !== undefined) {
      rows.push([`checkpoint of ${checkpoint.rows} rows`, `${round(checkpoint.durationMs, 0)} ms, ${checkpoint.bytes} B`]);
      rows.push(['rebuild from the checkpoint', `${round(checkpointRebuildMs, 0)} ms`]);
    }
  } finally {
    nats.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`state log, ${writes} sequential one-put transactions of ${valueBytes} B values over ${keys} keys\n`);
  for (const [name, figure] of rows) process.stdout.write(`  ${name.padEnd(44)} ${figure}\n`);
});
