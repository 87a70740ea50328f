// Tests the bundled server (src/bundle.ts) that `npm start` runs: it builds, starts, serves, delivers a signed webhook, refuses the uWS shim, and its lazy chunks and agent worker load.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { buildBundle } from '../src/bundle.js';
import { threadBody } from './delivery/delivery-env.js';
import { ApiClient } from './helpers/api.js';
import { startReceiver } from './helpers/receiver.js';

const READY = /listening on http:\/\/[^:]+:(\d+)/;

function start(main: string, env: Record<string, string>): { exited: Promise<number | string>; output: { stdout: string; stderr: string }; ready: Promise<number>; stop(): void } {
  const child = spawn(process.execPath, ['--max-semi-space-size=2', main], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const ready = new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output.stdout += chunk.toString();
      const port = READY.exec(output.stdout)?.[1];
      if (port !== undefined) resolve(Number(port));
    });
    void exited.then((code) => reject(new Error(`exited (${String(code)}) before ready: ${output.stderr}`)));
  });
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  return { exited, output, ready, stop: () => child.kill('SIGTERM') };
}

t.test('the bundle builds, starts, serves REST and sync-side pages, delivers a signed webhook, and stops cleanly', async (t) => {
  // Inside the package (tap's fixture folder), so the external packages resolve from node_modules as in dist/bundle.
  const root = t.testdir({ data: {}, shim: {} });
  const dir = await buildBundle(join(root, 'bundle'));
  const files = readdirSync(dir);
  for (const entry of ['main.js', 'server.js', 'config.js', 'log.js', 'worker.js']) t.ok(files.includes(entry), `${entry} written`);

  // undici and nats are in chunks of their own that nothing main.js loads at start imports statically (the point of
  // the lazy imports): the static import closure of main.js holds neither.
  const source = (file: string): string => readFileSync(join(dir, file), 'utf8');
  const chunkOf = (marker: string): string | undefined => files.find((f) => f.endsWith('.js') && source(f).includes(marker));
  const atStart = new Set<string>();
  const visit = (file: string): void => {
    if (atStart.has(file)) return;
    atStart.add(file);
    for (const match of source(file).matchAll(/(?:from|import)\s*"\.\/(chunk-[\w]+\.js)"/g)) visit(match[1] ?? '');
  };
  visit('main.js');
  t.ok(atStart.size > 1, `main.js loads ${atStart.size} files at start`);
  const nats = chunkOf('NatsConnectionImpl');
  t.not(nats, undefined, 'nats is in the bundle');
  t.notOk(atStart.has(String(nats)), 'nats is not loaded at start');
  // undici stays external (src/bundle.ts): bundled, the outbound client's requests never completed.
  t.equal(chunkOf('UND_ERR_CONNECT_TIMEOUT'), undefined, 'undici is not bundled');
  t.notOk([...atStart].some((file) => /from\s*"undici"/.test(source(file))), 'undici is not imported at start (a dynamic import at the first outbound request)');
  // Idle memory (bench/README.md, "Ninth session"): jose signs at the first token, piscina starts at the first agent run.
  const jose = chunkOf('ERR_JWS_INVALID');
  t.not(jose, undefined, 'jose is in the bundle');
  t.notOk(atStart.has(String(jose)), 'jose is not loaded at start');
  t.notOk([...atStart].some((file) => /from\s*"piscina"/.test(source(file))), 'piscina is not imported at start');
  // Twelfth session: ajv loads at the first request, prom-client at the first scrape of /metrics.
  for (const [name, marker] of [
    ['ajv', 'strictSchema'],
    ['prom-client', 'nodejs_gc_duration_seconds'],
  ] as const) {
    const chunk = chunkOf(marker);
    t.not(chunk, undefined, `${name} is in the bundle`);
    t.notOk(atStart.has(String(chunk)), `${name} is not loaded at start`);
  }

  // Loopback allowed for outbound HTTP, so the bundle may deliver a webhook to the receiver below.
  const server = start(join(dir, 'main.js'), { DATA_DIR: join(root, 'data'), DEV_BOOTSTRAP: 'true', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8' });
  t.teardown(() => server.stop());
  const port = await server.ready;
  t.match(server.output.stdout, /workspace id\s+ws_\w+/, 'the dev banner is printed');
  const health = await fetch(`http://127.0.0.1:${port}/readyz`);
  t.equal(health.status, 200, '/readyz answers');
  const openapi = (await (await fetch(`http://127.0.0.1:${port}/openapi.json`)).json()) as { info: { version: string } };
  t.match(openapi.info.version, /^\d+\.\d+\.\d+/, 'the version is read from package.json above the bundle');
  // The first scrape loads prom-client's chunk (src/metrics/scrape.ts), in the bundle.
  const scrape = await fetch(`http://127.0.0.1:${port}/metrics`);
  t.equal(scrape.status, 200, '/metrics answers');
  t.match(await scrape.text(), /^nodejs_eventloop_lag_max_seconds \S+$/m, 'with the event-loop delay figures');
  // An operation with the dev key: ajv is loaded and its schema compiled at this first request (src/http/validate.ts), in the bundle.
  const apiKey = /API key\s+(\S+)/.exec(server.output.stdout)?.[1] ?? '';
  const authToken = /^\s+auth token\s+(\S+)$/m.exec(server.output.stdout)?.[1] ?? '';
  const post = (data: unknown): Promise<Response> =>
    fetch(`http://127.0.0.1:${port}/v2/presence/update`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-api-key': apiKey, 'x-svc-auth-token': authToken },
      body: JSON.stringify({ data }),
    });
  const bad = await post({ organizationId: 'org1', documentId: 'doc1', users: 'u1' });
  const refusal = (await bad.json()) as { error?: { status: string; message: string } };
  t.equal(bad.status, 400, `a bad body is refused: ${JSON.stringify(refusal)}`);
  t.match(refusal.error, { status: 'INVALID_ARGUMENT', message: 'data.users must be an array' }, 'naming the field');
  const good = await post({ organizationId: 'org1', documentId: 'doc1', users: [{ userId: 'u1', status: 'online' }] });
  t.equal(good.status, 200, `a good one is served: ${await good.text()}`);

  // One real webhook: the first outbound request loads undici (external to the bundle) and must complete. Bundled,
  // undici's requests never did, and nothing but a delivery from the bundle shows it.
  const receiver = await startReceiver(t);
  const api = new ApiClient(`http://127.0.0.1:${port}`);
  const credentials = await api.createWorkspace();
  t.equal((await api.call(credentials, '/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).status, 200, 'advanced webhooks enabled');
  const endpoint = await api.call<{ id: string }>(credentials, '/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook` });
  const endpointId = endpoint.body.result?.data.id ?? '';
  const secret = (await api.call<{ secret: string }>(credentials, '/v2/workspace/advancedwebhook/endpoints/secret/get', { endpointId })).body.result?.data.secret ?? '';
  t.match(secret, /^whsec_/, 'the endpoint has a Standard Webhooks secret');
  t.equal((await api.call(credentials, '/v1/commentannotations/add', threadBody('bundle-thread'))).status, 200, 'a comment is added');
  const [delivery] = await receiver.waitFor(1);
  t.equal(delivery?.path, '/hook', 'the receiver got the webhook');
  const verified = new Webhook(secret).verify(delivery?.body ?? '', {
    'webhook-id': String(delivery?.headers['webhook-id']),
    'webhook-timestamp': String(delivery?.headers['webhook-timestamp']),
    'webhook-signature': String(delivery?.headers['webhook-signature']),
  }) as { event: string; data: { commentAnnotation: { annotationId: string } } };
  t.match(verified, { event: 'comment_annotation.add', data: { commentAnnotation: { annotationId: 'bundle-thread' } } }, 'it verifies with standardwebhooks');
  server.stop();
  t.equal(await server.exited, 0, 'SIGTERM stops cleanly');

  const shim = start(join(dir, 'main.js'), { DATA_DIR: join(root, 'shim'), UWS_USE_FALLBACK: '1' });
  await t.rejects(shim.ready, /exited \(1\) before ready/, 'it never listens');
  t.equal(await shim.exited, 1, 'the bundle refuses the uWS shim too');
  t.match(shim.output.stderr, /Plait refuses to start on the slow shim/);

  // The agents' pool starts `./worker.js` beside the chunk that holds src/agents/pool.ts: it is there and loads.
  t.ok(existsSync(join(dir, 'worker.js')));
  const worker = (await import(pathToFileURL(join(dir, 'worker.js')).href)) as { default?: unknown };
  t.equal(typeof worker.default, 'function', 'the worker module exports the task function piscina calls');
});
