// Tests issue 10 item 3: directory changes reach open sockets at once: closed with 4403, or made read-only.
import t, { type Test } from 'tap';
import * as Y from 'yjs';
import { CLOSE } from '../../src/errors.js';
import { writeReadOnly, writeUpdate } from '../../src/sync/protocol.js';
import type { ApiClient, Credentials } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';
import { rawSocket, roomName, syncBase, userToken, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-r', documentId: 'doc-r', editorId: 'main' };

interface Setup {
  readonly api: ApiClient;
  readonly credentials: Credentials;
  readonly userId: string;
  call(path: string, data: unknown): Promise<void>;
  /** Opens a raw socket for the user (a token with no resources: access comes from the directory alone). */
  open(): Promise<Awaited<ReturnType<typeof rawSocket>>>;
  /** The document's text as REST reads it. */
  text(): Promise<string>;
}

async function setup(t: Test, accessType: 'restricted' | 'public'): Promise<Setup> {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const userId = 'ursula';
  const call = async (path: string, data: unknown): Promise<void> => {
    const response = await api.call(credentials, path, data);
    t.equal(response.status, 200, `${path}: ${JSON.stringify(response.body).slice(0, 200)}`);
  };
  await call('/v2/organizations/documents/add', { organizationId: room.organizationId, documents: [{ documentId: room.documentId, accessType }], createOrganization: true });
  await call('/v2/users/add', { organizationId: room.organizationId, users: [{ userId }] });
  const token = await userToken(api, credentials, [], userId);
  return {
    api,
    credentials,
    userId,
    call,
    open: () => rawSocket(`${syncBase(url)}/${roomName(room)}?token=${token}`),
    text: async () => {
      const read = await api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', { ...room });
      return String(read.body.result?.data[0]?.data ?? '');
    },
  };
}

function edit(text: string): Uint8Array {
  const doc = new Y.Doc();
  doc.getText('content').insert(0, text);
  return writeUpdate(Y.encodeStateAsUpdate(doc));
}

const grantDocument = { type: 'document', id: room.documentId, organizationId: room.organizationId };

const revocations: Array<[string, 'restricted' | 'public', (s: Setup) => Promise<void>, (s: Setup) => Promise<void>]> = [
  [
    'removing the grant',
    'restricted',
    (s) => s.call('/v2/auth/permissions/add', { user: { userId: s.userId }, permissions: { resources: [{ ...grantDocument, accessRole: 'editor' }] } }),
    (s) => s.call('/v2/auth/permissions/remove', { userId: s.userId, permissions: { resources: [grantDocument] } }),
  ],
  [
    'removing the user from the group holding the grant',
    'restricted',
    async (s) => {
      await s.call('/v2/organizations/usergroups/add', { organizationId: room.organizationId, organizationUserGroups: [{ groupId: 'g' }] });
      await s.call('/v2/organizations/usergroups/users/add', { organizationId: room.organizationId, organizationUserGroupId: 'g', userIds: [s.userId] });
      await s.call('/v2/auth/permissions/add', {
        organizationUserGroup: { organizationId: room.organizationId, organizationUserGroupId: 'g' },
        permissions: { resources: [{ ...grantDocument, accessRole: 'editor' }] },
      });
    },
    (s) => s.call('/v2/organizations/usergroups/users/delete', { organizationId: room.organizationId, organizationUserGroupId: 'g', userIds: [s.userId] }),
  ],
  [
    'deleting the user',
    'restricted',
    (s) => s.call('/v2/auth/permissions/add', { user: { userId: s.userId }, permissions: { resources: [{ ...grantDocument, accessRole: 'editor' }] } }),
    (s) => s.call('/v2/users/delete', { organizationId: room.organizationId, userIds: [s.userId] }),
  ],
  ['restricting the document', 'public', async () => undefined, (s) => s.call('/v2/organizations/documents/access/update', { organizationId: room.organizationId, documentIds: [room.documentId], accessType: 'restricted' })],
  ['disabling the document', 'public', async () => undefined, (s) => s.call('/v2/organizations/documents/access/disablestate/update', { organizationId: room.organizationId, documentIds: [room.documentId], disabled: true })],
  ['disabling the organization', 'public', async () => undefined, (s) => s.call('/v2/organizations/access/disablestate/update', { organizationIds: [room.organizationId], disabled: true })],
];

for (const [name, accessType, grant, revoke] of revocations) {
  t.test(`${name} closes the open socket with 4403 and none of its later writes land`, async (t) => {
    const s = await setup(t, accessType);
    await grant(s);
    const socket = await s.open();
    socket.socket.send(edit('before '));
    await s.call('/v2/crdt/get', { ...room });
    await revoke(s);
    // Sent right after the change answered: the socket must already be closed or its frames refused.
    for (let i = 0; i < 5; i++) if (socket.socket.readyState === socket.socket.OPEN) socket.socket.send(edit(`after ${i} `));
    const end = await socket.ended;
    t.equal(end.code, CLOSE.PERMISSION_REVOKED, `closed with 4403 (${end.reason ?? ''})`);
    t.notMatch(await s.text(), /after/, 'no write after the change landed');
  });
}

t.test('editor downgraded to viewer: the open socket becomes read-only at once and is told so', async (t) => {
  const s = await setup(t, 'restricted');
  await s.call('/v2/auth/permissions/add', { user: { userId: s.userId }, permissions: { resources: [{ ...grantDocument, accessRole: 'editor' }] } });
  const socket = await s.open();
  socket.socket.send(edit('kept'));
  // Wait for the edit to be applied: REST reads go through the same mailbox after it.
  await s.call('/v2/crdt/get', { ...room });
  await s.call('/v2/auth/permissions/add', { user: { userId: s.userId }, permissions: { resources: [{ ...grantDocument, accessRole: 'viewer' }] } });
  for (let i = 0; i < 5; i++) socket.socket.send(edit(`refused ${i}`));
  await s.call('/v2/crdt/get', { ...room });
  const notice = writeReadOnly('access changed to viewer: this connection is now read-only');
  t.ok(
    socket.frames.some((frame) => Buffer.from(frame).equals(Buffer.from(notice))),
    'it was sent the read-only notice',
  );
  t.equal(socket.socket.readyState, socket.socket.OPEN, 'the connection stays open, as a viewer');
  t.notMatch(await s.text(), /refused/, 'its writes are refused');
  t.match(await s.text(), /kept/);
  socket.socket.close();
});
