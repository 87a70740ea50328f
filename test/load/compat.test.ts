// plait-load's sync scenarios against the other y-websocket-compatible servers: the stock y-websocket server and Hocuspocus, both on loopback port 0.
import { createServer, type IncomingMessage } from 'node:http';
import { Server as HocuspocusServer } from '@hocuspocus/server';
import t, { type Test } from 'tap';
import { WebSocketServer, type WebSocket } from 'ws';
import { runLoad } from '../../src/load/run.js';
import { resolveScenario } from '../../src/load/scenario.js';
import type { TargetKind } from '../../src/load/sync-client.js';

async function yWebsocketServer(t: Test): Promise<string> {
  const { setupWSConnection, docs } = (await import('@y/websocket-server/utils')) as {
    setupWSConnection: (conn: WebSocket, req: IncomingMessage) => void;
    docs: Map<string, { awareness: { destroy(): void }; destroy(): void }>;
  };
  const wss = new WebSocketServer({ noServer: true });
  // a /metrics endpoint, as a deployment behind a Prometheus exporter would have: each scrape counts itself
  let scrapes = 0;
  const server = createServer((request, response) => {
    if (request.url !== '/metrics') return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(`# TYPE scrapes_total counter\nscrapes_total ${++scrapes}\nopen_docs ${docs.size}\n`);
  });
  wss.on('connection', setupWSConnection);
  server.on('upgrade', (request, socket, head) => wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        // without persistence the stock server keeps every document (and its awareness timer) forever
        for (const doc of docs.values()) {
          doc.awareness.destroy();
          doc.destroy();
        }
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return `ws://127.0.0.1:${address.port}`;
}

async function hocuspocusServer(t: Test): Promise<string> {
  const server = new HocuspocusServer({ port: 0, address: '127.0.0.1', quiet: true, stopOnSignals: false });
  await server.listen();
  t.teardown(() => server.destroy());
  return `ws://127.0.0.1:${server.address.port}`;
}

const scenario = resolveScenario(['editing', 'readers', 'presence', 'comments'], [
  {
    documents: 2,
    rampUpSeconds: 0.5,
    steadySeconds: 2,
    editing: { editorsPerDocument: 2, editsPerSecond: 5 },
    readers: { perDocument: 2, lateJoinersPerDocument: 1, lateJoinAtSeconds: 1.5 },
    presence: { updatesPerSecond: 2, churnPerSecond: 0 },
  },
]);

const servers: Record<Exclude<TargetKind, 'plait'>, (t: Test) => Promise<string>> = { 'y-websocket': yWebsocketServer, hocuspocus: hocuspocusServer };

for (const [kind, start] of Object.entries(servers)) {
  t.test(`sync scenarios against ${kind}`, async (t) => {
    const url = await start(t);
    const { report, clients, sentPerDoc } = await runLoad({ url, kind: kind as TargetKind, scenario, workers: 1, seed: 3, log: () => {} });
    t.ok(report.delivery.sent > 0, `${report.delivery.sent} edits sent`);
    t.equal(report.delivery.complete, report.delivery.clients, 'every client holds every edit');
    for (const client of clients) t.equal(client.received, sentPerDoc[client.doc], `client ${client.id} (${client.role}) complete`);
    t.ok((report.phases.all.histograms['sync.e2e']?.count ?? 0) > 0, 'edit latency measured');
    t.ok((report.phases.all.counters['presence.received'] ?? 0) > 0, 'presence measured');
    t.match(report.warnings.join('\n'), /no Plait REST API: the comments and REST workloads are left out/, 'the REST workloads are dropped with a warning');
    t.equal(report.scenario.comments, undefined);
    const counters = report.phases.all.counters;
    t.equal(counters['errors'] ?? 0, counters['sync.disconnects'] ?? 0, `no errors but recovered drops (${report.errors.join('; ')})`);
    if (kind === 'y-websocket') {
      t.equal(report.server.available, true, 'the server figures were scraped');
      t.equal(report.server.delta?.['scrapes_total'], 1, 'counters as the change over the run');
      t.equal(report.server.after?.['open_docs'], 2, 'gauges as they were at the end');
    } else t.equal(report.server.available, false, 'a server without /metrics is noted, not an error');
  });
}
