// Test helper: a real HTTP receiver on loopback that records each request and answers by a per-test rule.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';

export interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface Receiver {
  readonly url: string;
  readonly requests: Received[];
  /** Status to answer with for the next request (default 200). */
  answer: (request: Received) => number;
  /** Resolves when `count` requests in all have arrived. */
  waitFor(count: number): Promise<Received[]>;
}

export async function startReceiver(t: Test): Promise<Receiver> {
  const requests: Received[] = [];
  const waiters: Array<{ count: number; resolve: (r: Received[]) => void }> = [];
  const receiver: Receiver = {
    url: '',
    requests,
    answer: () => 200,
    waitFor: (count) => (requests.length >= count ? Promise.resolve(requests.slice()) : new Promise((resolve) => waiters.push({ count, resolve }))),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: Received = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(received);
      res.statusCode = receiver.answer(received);
      res.end('ok');
      for (const waiter of [...waiters]) {
        if (requests.length >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(requests.slice());
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return Object.assign(receiver, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}
