// Test helper: a TCP proxy on loopback whose traffic can be held back both ways (a network partition) and let through again.
import { connect, createServer, type Socket } from 'node:net';
import type { Test } from 'tap';

export interface Partition {
  /** The proxy's port: connect the cut-off party here instead of to the target. */
  readonly port: number;
  /** Holds back every byte both ways; connections stay open (as in a partition, nobody sees a close). */
  cut(): void;
  /** Lets the held bytes through, in order, and everything after them. */
  heal(): void;
}

/** Starts a proxy in front of 127.0.0.1:`target`. */
export async function partition(t: Test, target: number): Promise<Partition> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let isCut = false;
  const hold = (from: Socket, to: Socket): void => {
    from.unpipe(to);
    from.pause();
  };
  const pass = (from: Socket, to: Socket): void => {
    from.pipe(to);
    from.resume();
  };
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    const pair = { client, upstream };
    pairs.add(pair);
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    if (isCut) {
      client.pause();
      upstream.pause();
    } else {
      pass(client, upstream);
      pass(upstream, client);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const { client, upstream } of pairs) {
          client.destroy();
          upstream.destroy();
        }
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  return {
    port: address.port,
    cut() {
      isCut = true;
      for (const { client, upstream } of pairs) {
        hold(client, upstream);
        hold(upstream, client);
      }
    },
    heal() {
      isCut = false;
      for (const { client, upstream } of pairs) {
        pass(client, upstream);
        pass(upstream, client);
      }
    },
  };
}
