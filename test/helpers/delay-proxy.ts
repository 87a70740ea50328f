// Test helper: a TCP proxy on loopback that holds every chunk for a fixed delay in each direction (a slow network or server, order kept).
import { createServer, connect, type Socket } from 'node:net';
import type { Test } from 'tap';

/** Starts the proxy in front of 127.0.0.1:`port`; resolves with its own port. Closed at teardown. */
export async function delayProxy(t: Test, port: number, delayMs: number): Promise<number> {
  const sockets = new Set<Socket>();
  const relay = (from: Socket, to: Socket): void => {
    // timers of equal delay fire in the order they were set, so chunks keep their order
    from.on('data', (chunk: Buffer) => setTimeout(() => to.destroyed || to.write(chunk), delayMs));
    from.on('end', () => setTimeout(() => to.end(), delayMs));
    from.on('error', () => to.destroy());
    from.on('close', () => setTimeout(() => to.destroy(), delayMs));
  };
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('close', () => sockets.delete(client));
    upstream.on('close', () => sockets.delete(upstream));
    relay(client, upstream);
    relay(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  return address.port;
}
