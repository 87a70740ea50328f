// Owns the Hocuspocus server under test: @hocuspocus/server with its default configuration (no extensions) in a bench host child.
import { Server } from '@hocuspocus/server';
import { serveHost } from '../lib/host.js';

serveHost(async () => {
  const server = new Server({ port: 0, address: '127.0.0.1', quiet: true, stopOnSignals: false });
  await server.listen();
  return { port: server.address.port, stop: () => server.destroy() };
});
