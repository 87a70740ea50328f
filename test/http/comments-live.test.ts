// Tests live delivery over /sync with a real y-websocket provider: REST comments and presence reach clients, sync presence over REST.
import * as decoding from 'lib0/decoding';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import type { LiveMessage } from '../../src/doc/collab-state.js';
import { LIVE_MESSAGE_TYPE } from '../../src/ws/live-messages.js';
import { env, type Env } from './comments-env.js';

const scope = { organizationId: 'org-live', documentId: 'doc-live' };

/** A real y-websocket client that collects the live messages (type 100) it receives. */
class LiveClient {
  readonly received: LiveMessage[] = [];
  private waiters: Array<{ match: (m: LiveMessage) => boolean; resolve: (m: LiveMessage) => void }> = [];
  readonly provider: WebsocketProvider;

  constructor(t: Test, baseUrl: string, token: string) {
    const doc = new Y.Doc();
    this.provider = new WebsocketProvider(`${baseUrl.replace(/^http/, 'ws')}/sync/${scope.organizationId}/${scope.documentId}`, 'main', doc, {
      WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
      disableBc: true,
      params: { token, ext: '1' },
    });
    this.provider.messageHandlers[LIVE_MESSAGE_TYPE] = (_encoder, decoder) => this.onLive(JSON.parse(decoding.readVarString(decoder)) as LiveMessage);
    t.teardown(() => {
      this.provider.destroy();
      doc.destroy();
    });
  }

  private onLive(message: LiveMessage): void {
    this.received.push(message);
    for (const waiter of [...this.waiters]) {
      if (!waiter.match(message)) continue;
      this.waiters = this.waiters.filter((w) => w !== waiter);
      waiter.resolve(message);
    }
  }

  /** The first message (already received or still to come) that matches. */
  next(match: (m: LiveMessage) => boolean): Promise<LiveMessage> {
    const seen = this.received.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }
}

async function tokenFor(e: Env, userId: string): Promise<string> {
  const res = await e.call<{ token: string }>('/v2/auth/generate_token', {
    userId,
    userProperties: { name: `Name ${userId}`, email: `${userId}@example.com` },
    permissions: { resources: [{ type: 'organization', id: scope.organizationId }] },
  });
  if (res.data === undefined) throw new Error(JSON.stringify(res.error));
  return res.data.token;
}

t.test('a REST-added thread and comment reach a connected sync client live', async (t) => {
  const e = await env(t);
  await e.call('/v2/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: 'before', commentData: [{ commentText: 'old', from: { userId: 'x' } }] }] });
  const client = new LiveClient(t, e.server.url, await tokenFor(e, 'viewer-1'));
  const snapshot = await client.next((m) => m.snapshot);
  t.same(snapshot.annotations.map((c) => (c.op === 'upsert' ? c.annotation.annotationId : c.annotationId)), ['before'], 'joining sends the current threads');

  await e.call('/v1/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: 't1', commentData: [{ commentText: 'hello', from: { userId: 'rest' } }] }] });
  const added = await client.next((m) => m.annotations.some((c) => c.op === 'upsert' && c.annotation.annotationId === 't1'));
  t.match(added.annotations[0], { op: 'upsert', annotation: { annotationId: 't1', comments: [{ commentText: 'hello' }] } });

  await e.call('/v2/commentannotations/comments/add', { ...scope, annotationId: 't1', commentData: [{ commentText: 'a reply', from: { userId: 'rest' } }] });
  const reply = await client.next((m) => m.annotations.some((c) => c.op === 'upsert' && c.annotation.comments.length === 2));
  t.match(reply, { organizationId: scope.organizationId, documentId: scope.documentId, snapshot: false });
  t.match(reply.annotations[0], { annotation: { comments: [{ commentId: 1 }, { commentId: 2, commentText: 'a reply', status: 'added' }] } });

  await e.call('/v2/commentannotations/delete', { ...scope, annotationIds: ['before'] });
  const deleted = await client.next((m) => m.annotations.some((c) => c.op === 'delete'));
  t.same(deleted.annotations, [{ op: 'delete', annotationId: 'before' }]);
});

t.test('REST presence reaches sync clients; sync users are seen over REST, go offline, then disappear', async (t) => {
  const e = await env(t, { presenceOfflineTtlMs: 150 });
  const watcher = new LiveClient(t, e.server.url, await tokenFor(e, 'watcher'));
  await watcher.next((m) => m.presence.users.some((u) => u.userId === 'watcher' && u.status === 'online'));

  await e.call('/v2/presence/update', { ...scope, users: [{ userId: 'rest-user', name: 'Rita', status: 'away' }] });
  const fromRest = await watcher.next((m) => m.presence.users.some((u) => u.userId === 'rest-user'));
  t.match(fromRest.presence.users, [{ userId: 'rest-user', name: 'Rita', status: 'away', source: 'rest' }]);

  const visitor = new LiveClient(t, e.server.url, await tokenFor(e, 'visitor'));
  await watcher.next((m) => m.presence.users.some((u) => u.userId === 'visitor' && u.status === 'online'));
  const listed = await e.call<Array<{ userId: string; status: string; source: string; connections: number; name?: string }>>('/v2/presence/get', scope);
  t.match(
    listed.data.find((u) => u.userId === 'visitor'),
    { status: 'online', source: 'sync', connections: 1, name: 'Name visitor' },
    'a connected sync user is seen over REST',
  );

  visitor.provider.destroy();
  const offline = await watcher.next((m) => m.presence.users.some((u) => u.userId === 'visitor' && u.status === 'offline'));
  t.match(offline.presence.users, [{ userId: 'visitor', status: 'offline', connections: 0 }]);
  const afterLeave = await e.call<Array<{ userId: string; status: string }>>('/v2/presence/get', { ...scope, userIds: ['visitor'] });
  t.match(afterLeave.data, [{ status: 'offline' }]);
  await watcher.next((m) => m.presence.removed.includes('visitor'));
  const gone = await e.call('/v2/presence/get', { ...scope, userIds: ['visitor'] });
  t.same(gone.data, [], 'gone after the offline delay');
});

t.test('deleting the document removes its threads and presence, even with a client connected', async (t) => {
  const e = await env(t);
  await e.call('/v2/organizations/add', { organizations: [{ organizationId: scope.organizationId }] });
  await e.call('/v2/organizations/documents/add', { organizationId: scope.organizationId, documents: [{ documentId: scope.documentId }] });
  await e.call('/v2/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: 'doomed', commentData: [{ from: { userId: 'x' } }] }] });
  await e.call('/v2/presence/add', { ...scope, users: [{ userId: 'rest-user' }] });
  const client = new LiveClient(t, e.server.url, await tokenFor(e, 'member'));
  await client.next((m) => m.presence.users.some((u) => u.userId === 'member'));

  const deleted = await e.call<Record<string, { success: boolean }>>('/v2/organizations/documents/delete', { organizationId: scope.organizationId, documentIds: [scope.documentId] });
  t.match(deleted.data, { [scope.documentId]: { success: true } });
  t.same((await e.call('/v2/commentannotations/get', scope)).data, []);
  t.same((await e.call('/v2/presence/get', scope)).data, [], 'the departing connection wrote no presence back');
  const store = e.server.server.services.store;
  const prefix = [e.creds.apiKey, scope.organizationId, scope.documentId];
  for (const name of ['annotations', 'presence'] as const) {
    const keys = Array.from(store.records(name).getKeys({ start: prefix, end: [...prefix, new Uint8Array([0xff])] }));
    t.same(keys, [], `${name} range is empty`);
  }
});
