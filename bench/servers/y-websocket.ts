// Owns the y-websocket server under test: the stock @y/websocket-server bin (http + ws + setupWSConnection) in a bench host child.
import { createServer } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { serveHost } from '../lib/host.js';

serveHost(async () => {
  // imported after env is in place: utils.js reads YPERSISTENCE and GC at module load
  const { setupWSConnection, getPersistence } = (await import('@y/websocket-server/utils')) as {
    setupWSConnection: (conn: WebSocket, req: import('node:http').IncomingMessage) => void;
    getPersistence: () => { provider?: { destroy?: () => Promise<void>; tr?: Promise<unknown> } } | null;
  };
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'text/plain' });
    response.end('okay');
  });
  wss.on('connection', setupWSConnection);
  server.on('upgrade', (request, socket, head) => {
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('y-websocket server has no TCP address');
  return {
    port: address.port,
    settle: async () => {
      // y-leveldb chains every write on `tr`; wait until no write was queued behind the one awaited
      const provider = getPersistence()?.provider;
      let seen: Promise<unknown> | undefined;
      while (provider?.tr !== undefined && provider.tr !== seen) {
        seen = provider.tr;
        await seen;
      }
    },
    stop: async () => {
      await new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        server.close(() => resolve());
      });
      // the stock bin has no graceful stop; ours lets LevelDB finish its queued writes (YPERSISTENCE) before exit
      await getPersistence()?.provider?.destroy?.();
    },
  };
});
