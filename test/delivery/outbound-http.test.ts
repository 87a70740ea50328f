// Tests src/delivery/outbound/http.ts: the SSRF guard at connect time and on redirects, the allow-list, timeouts, size cap.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { AddressPolicy, AllowListError } from '../../src/delivery/outbound/address-policy.js';
import { OutboundError, OutboundHttp, type Resolver } from '../../src/delivery/outbound/http.js';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

async function receiver(t: Test, handler: Handler, host = '127.0.0.1'): Promise<{ server: Server; url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push(`${req.method ?? ''} ${req.url ?? ''}`);
      handler(req, res, Buffer.concat(chunks).toString());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, hits };
}

function client(t: Test, allowedNetworks: readonly string[], resolve?: Resolver): OutboundHttp {
  const http = new OutboundHttp(resolve === undefined ? { allowedNetworks } : { allowedNetworks, resolve });
  t.teardown(() => http.close());
  return http;
}

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return error instanceof OutboundError ? error.code : `other: ${String(error)}`;
  }
}

t.test('the policy refuses every non-public range and the allow-list exempts exactly its networks', async (t) => {
  const policy = new AddressPolicy([]);
  for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '100.100.100.200', '0.0.0.0', '::1', '::', 'fd00:ec2::254', 'fc00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '64:ff9b::a9fe:a9fe', '2002:7f00:1::', '224.0.0.1']) {
    t.not(policy.refusal(address), undefined, `${address} refused`);
  }
  for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8']) {
    t.equal(policy.refusal(address), undefined, `${address} allowed`);
  }
  const loopback = new AddressPolicy(['127.0.0.0/8']);
  t.equal(loopback.refusal('127.0.0.1'), undefined);
  t.equal(loopback.refusal('127.9.9.9'), undefined);
  t.equal(loopback.refusal('::ffff:127.0.0.1'), undefined, 'the mapped form of an allowed address is allowed');
  t.not(loopback.refusal('::1'), undefined, 'the v4 allow-list does not open v6 loopback');
  t.not(loopback.refusal('10.0.0.1'), undefined);
  t.equal(new AddressPolicy(['::1/128', '10.0.0.5']).refusal('10.0.0.5'), undefined, 'a bare address is a /32');
  t.throws(() => new AddressPolicy(['not-a-cidr']), AllowListError);
  t.throws(() => new AddressPolicy(['10.0.0.0/33']), AllowListError);
});

t.test('without the allow-list, loopback, private, metadata and v6 loopback URLs are refused before any connect', async (t) => {
  let connected = false;
  const target = await receiver(t, (_req, res) => {
    connected = true;
    res.end('ok');
  });
  const http = client(t, []);
  t.equal(await code(http.request({ url: target.url })), 'BLOCKED_ADDRESS', '127.0.0.1');
  t.equal(await code(http.request({ url: 'http://10.0.0.1/' })), 'BLOCKED_ADDRESS', '10.x');
  t.equal(await code(http.request({ url: 'http://169.254.169.254/latest/meta-data/' })), 'BLOCKED_ADDRESS', 'metadata');
  t.equal(await code(http.request({ url: 'http://[::1]:1/' })), 'BLOCKED_ADDRESS', '[::1]');
  t.equal(await code(http.request({ url: 'http://[::ffff:7f00:1]:1/' })), 'BLOCKED_ADDRESS', 'v4-mapped loopback');
  t.equal(await code(http.request({ url: 'http://0x7f000001/' })), 'BLOCKED_ADDRESS', 'hex loopback (WHATWG URL normalizes it)');
  t.equal(connected, false, 'the receiver never saw a request');
});

t.test('a name that resolves to a private address is refused at connect time', async (t) => {
  const names: Record<string, string> = { 'internal.test': '10.20.30.40', 'meta.test': '169.254.169.254', 'local.test': '127.0.0.1', 'six.test': '::1' };
  const resolve: Resolver = async (hostname) => {
    const address = names[hostname];
    if (address === undefined) throw Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND' });
    return [{ address, family: address.includes(':') ? 6 : 4 }];
  };
  const http = client(t, [], resolve);
  for (const name of Object.keys(names)) {
    t.equal(await code(http.request({ url: `http://${name}:9/` })), 'BLOCKED_ADDRESS', name);
  }
  t.equal(await code(http.request({ url: 'http://missing.test/' })), 'NETWORK', 'an unknown name is a network failure');
  // The system resolver too: localhost resolves to loopback.
  t.equal(await code(client(t, []).request({ url: 'http://localhost:9/' })), 'BLOCKED_ADDRESS', 'localhost');
});

t.test('an allow-listed name reaches its receiver; a name resolving to a mix keeps only allowed addresses', async (t) => {
  const target = await receiver(t, (req, res, body) => {
    res.setHeader('x-echo', req.headers.authorization ?? '');
    res.end(`${req.method ?? ''}:${body}`);
  });
  const port = new URL(target.url).port;
  const resolve: Resolver = async () => [{ address: '10.9.9.9', family: 4 }, { address: '127.0.0.1', family: 4 }];
  const http = client(t, ['127.0.0.0/8'], resolve);
  const response = await http.request({ url: `http://hook.test:${port}/in`, method: 'POST', body: 'hello', headers: { authorization: 'Basic x' } });
  t.equal(response.status, 200);
  t.equal(response.body.toString(), 'POST:hello');
  t.equal(response.headers['x-echo'], 'Basic x');
  t.equal(response.url, `http://hook.test:${port}/in`);
});

t.test('redirects are followed by hand and each hop is checked again', async (t) => {
  const final = await receiver(t, (req, res) => res.end(`final ${req.method ?? ''} ${req.headers.authorization ?? 'no-auth'}`));
  const hops = await receiver(t, (req, res) => {
    const to: Record<string, string> = {
      '/to-metadata': 'http://169.254.169.254/latest/meta-data/',
      '/to-v6-loopback': `http://[::1]:${new URL(final.url).port}/`,
      '/to-private': 'http://10.0.0.7/admin',
      '/same': '/final-here',
      '/see-other': `${final.url}/x`,
      '/loop': '/loop',
    };
    if (req.url === '/final-here') {
      res.end(`here ${req.method ?? ''} ${req.headers.authorization ?? 'no-auth'}`);
      return;
    }
    const location = to[req.url ?? ''];
    res.statusCode = req.url === '/see-other' ? 303 : 307;
    if (location !== undefined) res.setHeader('location', location);
    res.end();
  });
  const http = client(t, ['127.0.0.0/8']);
  t.equal(await code(http.request({ url: `${hops.url}/to-metadata` })), 'BLOCKED_ADDRESS', 'redirect to metadata');
  t.equal(await code(http.request({ url: `${hops.url}/to-v6-loopback` })), 'BLOCKED_ADDRESS', 'redirect to [::1]');
  t.equal(await code(http.request({ url: `${hops.url}/to-private` })), 'BLOCKED_ADDRESS', 'redirect to 10.x');
  const same = await http.request({ url: `${hops.url}/same`, method: 'POST', body: 'b', headers: { authorization: 'Basic s' } });
  t.equal(same.body.toString(), 'here POST Basic s', '307 keeps method and credentials on the same origin');
  t.equal(same.url, `${hops.url}/final-here`);
  const other = await http.request({ url: `${hops.url}/see-other`, method: 'POST', body: 'b', headers: { authorization: 'Basic s' } });
  t.equal(other.body.toString(), 'final GET no-auth', '303 turns into GET and another origin gets no credentials');
  t.equal(await code(http.request({ url: `${hops.url}/loop` })), 'TOO_MANY_REDIRECTS');
});

t.test('timeouts, the size cap, bad URLs and network failures have their own codes', async (t) => {
  const pending: ServerResponse[] = [];
  const target = await receiver(t, (req, res) => {
    if (req.url === '/slow') {
      pending.push(res); // never answered; the client's deadline must end it
      return;
    }
    if (req.url === '/big') {
      res.end(Buffer.alloc(64 * 1024, 1));
      return;
    }
    res.end('ok');
  });
  t.teardown(() => { for (const res of pending) res.destroy(); });
  const http = client(t, ['127.0.0.0/8']);
  t.equal(await code(http.request({ url: `${target.url}/slow`, timeoutMs: 50 })), 'TIMEOUT');
  t.equal(await code(http.request({ url: `${target.url}/big`, maxBytes: 1024 })), 'TOO_LARGE');
  t.equal((await http.request({ url: `${target.url}/big`, maxBytes: 64 * 1024 })).body.length, 64 * 1024, 'exactly at the cap is fine');
  t.equal(await code(http.request({ url: 'ftp://example.com/' })), 'BAD_URL');
  t.equal(await code(http.request({ url: 'not a url' })), 'BAD_URL');
  t.equal(await code(http.request({ url: `http://user:pw@127.0.0.1:${new URL(target.url).port}/` })), 'BAD_URL');
  const closed = await receiver(t, (_req, res) => res.end());
  const closedPort = new URL(closed.url).port;
  await new Promise<void>((resolve) => { closed.server.closeAllConnections(); closed.server.close(() => resolve()); });
  t.equal(await code(http.request({ url: `http://127.0.0.1:${closedPort}/` })), 'NETWORK', 'connection refused');
  const controller = new AbortController();
  const aborted = http.request({ url: `${target.url}/slow`, signal: controller.signal });
  controller.abort();
  t.equal(await code(aborted), 'NETWORK', "the caller's own abort is not a timeout");
});

t.test('OUTBOUND_ALLOWED_NETWORKS is a validated comma-separated list, empty by default', async (t) => {
  t.same(loadConfig({}, []).outboundAllowedNetworks, []);
  t.same(loadConfig({ OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8, ::1/128' }, []).outboundAllowedNetworks, ['127.0.0.0/8', '::1/128']);
  t.throws(() => loadConfig({ OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8,intranet' }, []), { message: /OUTBOUND_ALLOWED_NETWORKS: "intranet" is not an IP address/ });
  t.throws(() => loadConfig({ SMTP_URL: 'http://mail' }, []), { message: /SMTP_URL must be an smtp/ });
  t.throws(() => loadConfig({ SENDGRID_BASE_URL: 'nope' }, []), { message: /SENDGRID_BASE_URL must be an http/ });
});

t.test('undici is loaded at the first request, not when the client is made; close before any request is clean', async (t) => {
  const { url, hits } = await receiver(t, (_req, res) => res.end('lazy'));
  const http = client(t, ['127.0.0.0/8']);
  t.equal(http.started, false, 'no pool before the first request');
  const response = await http.request({ url: `${url}/first` });
  t.equal(http.started, true);
  t.equal(response.body.toString(), 'lazy');
  t.same(hits, ['GET /first']);

  const unused = new OutboundHttp({ allowedNetworks: ['127.0.0.0/8'] });
  await unused.close();
  t.equal(unused.started, false, 'closing an unused client loads nothing');
  t.equal(await code(unused.request({ url: `${url}/after-close` })), 'NETWORK', 'a closed client refuses');
  t.same(hits, ['GET /first'], 'nothing was sent after close');
});
