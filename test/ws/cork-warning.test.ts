// Tests that the server process never writes an HTTP response outside uWS's cork: REST replies, refused upgrades and sync upgrades leave no cork warning on stderr.
import t from 'tap';
import { ApiClient } from '../helpers/api.js';
import { startServerProcess } from '../helpers/process.js';
import { editorOf, rawSocket, syncBase, upgradeStatus, userToken } from '../helpers/sync.js';

const WARNING = 'writes must be made from within a corked callback';

t.test('token requests, REST replies and sync upgrades print no uWS cork warning', async (t) => {
  const server = await startServerProcess(t, { DATA_DIR: t.testdir(), DEV_BOOTSTRAP: 'false' });
  const api = new ApiClient(`http://127.0.0.1:${server.port}`);
  const credentials = await api.createWorkspace();
  // Documents are public to every user of the API key by default; restricted, a missing grant is refused with 403.
  t.equal((await api.call(credentials, '/v2/workspace/apikeyconfig/update', { defaultDocumentAccessType: 'restricted' })).status, 200);
  const room = { organizationId: 'org1', documentId: 'doc1', editorId: 'main' };
  // The token route that was suspected, and a document write (a REST reply after the actor's commit).
  const token = await userToken(api, credentials, [editorOf(room)]);
  const write = await api.call(credentials, '/v2/presence/update', { organizationId: 'org1', documentId: 'doc1', users: [{ userId: 'u1', status: 'online' }] });
  t.equal(write.status, 200, 'a REST write is answered');
  const url = (documentId: string, userToken: string): string => `${syncBase(api.baseUrl)}/org1/${documentId}/main?token=${userToken}`;

  // Refused upgrades answer with the JSON envelope (src/edge/reply.ts).
  t.equal(await upgradeStatus(url('doc1', 'not-a-token')), 401, 'a bad token is refused with 401');
  t.equal(await upgradeStatus(url('doc2', token)), 403, 'a document the token does not grant is refused with 403');
  // Accepted upgrades: the first loads the document, the second finds it loaded. Before the token was checked
  // synchronously each one wrote its 101 after an async gap, uncorked, and uWS printed the warning once per upgrade.
  const first = await rawSocket(url('doc1', token));
  const second = await rawSocket(url('doc1', token));
  t.ok(first.socket.readyState === first.socket.OPEN && second.socket.readyState === second.socket.OPEN, 'both sockets opened');
  first.socket.close();
  second.socket.close();
  await Promise.all([first.ended, second.ended]);

  server.child.kill('SIGTERM');
  t.equal(await server.exited, 0, 'the server stops cleanly');
  await server.closed;
  t.notOk(server.stderr().includes(WARNING), `no cork warning on stderr: ${JSON.stringify(server.stderr().slice(0, 400))}`);
});
