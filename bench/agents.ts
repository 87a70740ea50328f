// Owns the agents benchmark: sync fan-out p99 and REST p99 while agent runs execute in the worker pool, against idle.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { finish, flags, main, num } from './lib/cli.js';
import { connectClient, plaitCredentials, within } from './lib/clients.js';
import { launchServer, type ServerHandle } from './lib/launch.js';
import { emit, isMain, progress, type Figure } from './lib/report.js';
import { summarize } from './lib/stats.js';

const USAGE = `node --import=tsx bench/agents.ts [flags]
  --runs R          agent runs started for the loaded phase (default 20)
  --readers N       sync readers of the one document (default 20)
  --rate U          updates per second from the writer (default 50)
  --seconds S       measured seconds per phase (default 5)
  --links L         links on the page each run checks (default 60)`;

/** A page with `links` links to pages that answer after a few ms, served from this process on loopback. */
async function pageServer(links: number): Promise<{ url: string; close: () => void }> {
  const body = `<html><head><title>Bench</title></head><body><h1>Bench</h1>${Array.from({ length: links }, (_, i) => `<p>Paragraph ${i} with a <a href="/l/${i}">link ${i}</a>.</p>`).join('')}</body></html>`;
  const server = createServer((req, res) => {
    if (req.url === '/page') return void res.writeHead(200, { 'content-type': 'text/html' }).end(body);
    setTimeout(() => res.writeHead(Number(req.url?.split('/')[2]) % 7 === 0 ? 404 : 200).end('ok'), 5);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/page`, close: () => server.close() };
}

interface Phase {
  readonly syncP99: number;
  readonly restP99: number;
  readonly restRps: number;
}

/** One writer updating at `rate`/s and `readers` readers; REST Update Presence under autocannon at the same time. */
async function measure(server: ServerHandle, creds: Awaited<ReturnType<typeof plaitCredentials>>, options: { readers: number; rate: number; seconds: number }, phase: string): Promise<Phase> {
  const target = { protocol: 'plait' as const, port: server.port, plait: { organizationId: creds.organizationId, token: creds.token } };
  const doc = `agents-bench-${phase}`;
  const writer = connectClient(target, doc);
  const readers = Array.from({ length: options.readers }, () => connectClient(target, doc));
  await within(Promise.all([writer.synced, ...readers.map((r) => r.synced)]), 60_000, 'sync clients');
  const latencies: number[] = [];
  for (const reader of readers) reader.doc.getMap('bench').observe((event) => {
    const sent = event.target.get('sent');
    if (typeof sent === 'number') latencies.push(performance.now() - sent);
  });
  const timer = setInterval(() => writer.doc.getMap('bench').set('sent', performance.now()), 1000 / options.rate);
  const rest = await autocannon({
    url: `http://127.0.0.1:${server.port}/v2/presence/update`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...creds.headers },
    body: JSON.stringify({ data: { organizationId: creds.organizationId, documentId: 'agents-bench-rest', users: [{ userId: 'u1', status: 'online' }] } }),
    connections: 8,
    duration: options.seconds,
  });
  clearInterval(timer);
  for (const client of [writer, ...readers]) client.destroy();
  const sync = summarize(latencies);
  progress(`${phase}: sync p99 ${sync.p99.toFixed(1)} ms over ${sync.count} deliveries; REST p99 ${rest.latency.p99} ms at ${Math.round(rest['2xx'] / rest.duration)} req/s`);
  return { syncP99: sync.p99, restP99: rest.latency.p99, restRps: rest['2xx'] / rest.duration };
}

export async function runAgentsBench(options: { runs: number; readers: number; rate: number; seconds: number; links: number }): Promise<Figure[]> {
  const pages = await pageServer(options.links);
  const server = await launchServer('plait', { env: { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8', AGENT_QUEUE_LIMIT: String(options.runs * 2) } });
  try {
    const creds = await plaitCredentials(server.port);
    const idle = await measure(server, creds, options, 'idle');
    const call = async (path: string, data: unknown): Promise<{ result?: { data: Record<string, unknown> } }> =>
      (await fetch(`http://127.0.0.1:${server.port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...creds.headers }, body: JSON.stringify({ data }) })).json() as Promise<{ result?: { data: Record<string, unknown> } }>;
    // Warm the pool's threads, then start the runs and measure while they execute.
    await call('/v2/agents/prompt/validate', { prompt: 'warm up' });
    const ids: string[] = [];
    for (let i = 0; i < options.runs; i++) {
      const started = await call('/v2/agents/execution/run', { agentId: i % 2 === 0 ? 'broken-links' : 'readability', url: pages.url, organizationId: creds.organizationId, documentId: `agents-bench-target-${i}` });
      const id = started.result?.data['executionId'];
      if (typeof id !== 'string') throw new Error(`run did not start: ${JSON.stringify(started)}`);
      ids.push(id);
    }
    const loaded = await measure(server, creds, options, `${options.runs} agent runs`);
    const counts = await call('/v2/agents/execution/count', {});
    progress(`runs after the loaded phase: ${JSON.stringify(counts.result?.data['byStatus'])}`);
    const bench = `agents: ${options.runs} runs vs idle`;
    return [
      { bench, metric: 'sync p99 idle', unit: 'ms', server: 'plait', value: idle.syncP99, better: 'lower' },
      { bench, metric: 'sync p99 with runs', unit: 'ms', server: 'plait', value: loaded.syncP99, better: 'lower' },
      { bench, metric: 'sync p99 ratio', unit: '×', server: 'plait', value: loaded.syncP99 / idle.syncP99, better: 'lower', detail: { target: '≤ 1.1' } },
      { bench, metric: 'REST p99 idle', unit: 'ms', server: 'plait', value: idle.restP99, better: 'lower' },
      { bench, metric: 'REST p99 with runs', unit: 'ms', server: 'plait', value: loaded.restP99, better: 'lower' },
      { bench, metric: 'REST p99 ratio', unit: '×', server: 'plait', value: loaded.restP99 / Math.max(idle.restP99, 1), better: 'lower', detail: { target: '≤ 1.1' } },
    ];
  } finally {
    await server.stop();
    pages.close();
  }
}

if (isMain(import.meta.url)) {
  main(async () => {
    const values = flags(USAGE, { runs: { type: 'string' }, readers: { type: 'string' }, rate: { type: 'string' }, seconds: { type: 'string' }, links: { type: 'string' } });
    const figures = await runAgentsBench({
      runs: num(values, 'runs', 20, 1, 1000),
      readers: num(values, 'readers', 20, 1, 2000),
      rate: num(values, 'rate', 50, 1, 1000),
      seconds: num(values, 'seconds', 5, 1, 120),
      links: num(values, 'links', 60, 1, 1000),
    });
    for (const figure of figures) emit(figure);
    finish(figures);
  });
}
