// Test helper: a loopback HTTP server that serves pages from a route table, and can hold a response until released.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';

export type Route = { status?: number; type?: string; body?: string; headers?: Record<string, string> } | ((req: IncomingMessage, res: ServerResponse) => void);

export interface PageServer {
  readonly url: string;
  readonly port: number;
  readonly routes: Map<string, Route>;
  readonly requests: string[];
  /** Requests to `path` wait until `release()` is called; resolves when the first one arrives. */
  hold(path: string): { arrived: Promise<void>; release: () => void };
}

export async function pageServer(t: Test, routes: Record<string, Route>, host = '127.0.0.1'): Promise<PageServer> {
  const table = new Map(Object.entries(routes));
  const requests: string[] = [];
  const held = new Map<string, { wait: Promise<void>; arrived: () => void }>();
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    requests.push(`${req.method ?? 'GET'} ${path}`);
    const respond = (): void => {
      const route = table.get(path);
      if (route === undefined) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      } else if (typeof route === 'function') {
        route(req, res);
      } else {
        res.writeHead(route.status ?? 200, { 'content-type': route.type ?? 'text/html; charset=utf-8', ...(route.headers ?? {}) }).end(req.method === 'HEAD' ? undefined : (route.body ?? ''));
      }
    };
    const hold = held.get(path);
    if (hold === undefined) return respond();
    hold.arrived();
    void hold.wait.then(respond);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    routes: table,
    requests,
    hold(path) {
      let release!: () => void;
      let arrived!: () => void;
      const wait = new Promise<void>((resolve) => (release = resolve));
      const arrival = new Promise<void>((resolve) => (arrived = resolve));
      held.set(path, { wait, arrived });
      return { arrived: arrival, release };
    },
  };
}
