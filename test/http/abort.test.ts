import type { Socket } from 'node:net';
import t from 'tap';
import { openSocket } from '../helpers/raw-http.js';
import { startTestServer } from '../helpers/server.js';


function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => socket.once('close', () => resolve()));
}

t.test('requests aborted mid-body or mid-operation never stop the server', async (t) => {
  const { server, api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const body = JSON.stringify({ data: { ownerEmail: 'aborted@example.com' } });
  for (let i = 0; i < 50; i++) {
    const socket = await openSocket(server.port);
    const gone = closed(socket);
    // Declares the whole body, sends half of it, then vanishes.
    socket.write(
      `POST /v2/workspace/create HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, body.length / 2)}`,
    );
    socket.destroy();
    await gone;
  }
  for (let i = 0; i < 20; i++) {
    // A complete request whose client leaves before the reply is written (the handler awaits a commit).
    const socket = await openSocket(server.port);
    const gone = closed(socket);
    const full = JSON.stringify({ data: { ownerEmail: `gone${i}@example.com` } });
    socket.write(`POST /v2/workspace/create HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${full.length}\r\n\r\n${full}`);
    socket.destroy();
    await gone;
  }
  const health = await fetch(`http://127.0.0.1:${server.port}/healthz`);
  t.equal(health.status, 200, 'still serving after 70 aborted requests');
  const call = await api.call(credentials, '/v2/workspace/apikeyconfig/get', {});
  t.equal(call.status, 200);
  t.equal((await api.post('/v2/workspace/create', { ownerEmail: 'aborted@example.com' })).status, 200, 'the half-sent create wrote nothing');
});
