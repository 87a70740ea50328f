// Test helper: a TCP load balancer on loopback that sends each new connection to the first backend that accepts it.
import { connect, createServer, type Socket } from 'node:net';
import type { Test } from 'tap';

/**
 * Starts a balancer in front of 127.0.0.1:`ports` (tried in this order for every new connection; a backend that
 * refuses, e.g. a node that stopped listening while it drains, is skipped). Resolves with its own port.
 */
export async function balancer(t: Test, ports: readonly number[]): Promise<number> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    track(client);
    client.pause();
    client.on('error', () => client.destroy());
    const attempt = (index: number): void => {
      const port = ports[index];
      if (port === undefined) return void client.destroy();
      const upstream = connect(port, '127.0.0.1');
      let piped = false;
      upstream.once('error', () => {
        upstream.destroy();
        // Refused before it connected: the next backend; after, the client's connection ends with it.
        if (!piped && !client.destroyed) attempt(index + 1);
        else client.destroy();
      });
      upstream.once('connect', () => {
        piped = true;
        track(upstream);
        upstream.on('close', () => client.destroy());
        client.on('close', () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    attempt(0);
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
  if (address === null || typeof address === 'string') throw new Error('the balancer has no TCP address');
  return address.port;
}
