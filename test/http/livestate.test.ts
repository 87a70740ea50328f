// Tests livestate/broadcast: values reach y-websocket clients that take extension frames, merge or replace, late joiners get them.
import * as decoding from 'lib0/decoding';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import type { LiveStateValue } from '../../src/doc/live-state.js';
import { mergeLiveState } from '../../src/doc/live-state.js';
import { LIVE_STATE_MESSAGE_TYPE } from '../../src/ws/live-messages.js';
import type { ApiClient, Credentials } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';
import { editorOf, roomName, syncBase, synced, userToken, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-ls', documentId: 'doc-ls', editorId: 'main' };

/** A stock y-websocket provider with `ext=1` that collects live state frames (type 101). */
function liveStateClient(t: Test, url: string, token: string, ext = true) {
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(syncBase(url), roomName(room), doc, {
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    disableBc: true,
    params: ext ? { token, ext: '1' } : { token },
  });
  const received: LiveStateValue[] = [];
  let waiters: Array<{ match: (v: LiveStateValue) => boolean; resolve: (v: LiveStateValue) => void }> = [];
  provider.messageHandlers[LIVE_STATE_MESSAGE_TYPE] = (_encoder, decoder) => {
    const value = JSON.parse(decoding.readVarString(decoder)) as LiveStateValue;
    received.push(value);
    for (const waiter of [...waiters]) {
      if (!waiter.match(value)) continue;
      waiters = waiters.filter((w) => w !== waiter);
      waiter.resolve(value);
    }
  };
  t.teardown(() => {
    provider.destroy();
    doc.destroy();
  });
  const next = (match: (v: LiveStateValue) => boolean): Promise<LiveStateValue> => {
    const seen = received.find(match);
    return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ match, resolve }));
  };
  return { provider, doc, received, next, synced: () => synced({ doc, provider, text: doc.getText('content') }) };
}

const broadcast = (api: ApiClient, credentials: Credentials, path: string, body: Record<string, unknown>) =>
  api.call<{ success: boolean }>(credentials, path, { organizationId: room.organizationId, documentId: room.documentId, ...body });

t.test('a broadcast reaches a y-websocket client with extension frames; merge merges, replace replaces; late joiners get the value', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const token = await userToken(api, credentials, [editorOf(room)]);
  const live = liveStateClient(t, url, token);
  const plain = liveStateClient(t, url, token, false);
  await Promise.all([live.synced(), plain.synced()]);

  const first = await broadcast(api, credentials, '/v2/livestate/broadcast', { liveStateDataId: 'cursor-mode', data: { mode: 'draw', tools: { pen: 1 } } });
  t.equal(first.status, 200);
  t.same(first.body.result?.data, { success: true });
  const got = await live.next((v) => v.liveStateDataId === 'cursor-mode');
  t.same(got.data, { mode: 'draw', tools: { pen: 1 } });
  t.equal(got.documentId, room.documentId);

  await broadcast(api, credentials, '/v1/livestate/broadcast', { liveStateDataId: 'cursor-mode', data: { tools: { eraser: 2 } }, merge: true });
  const merged = await live.next((v) => v.liveStateDataId === 'cursor-mode' && (v.data as { tools: Record<string, number> }).tools['eraser'] === 2);
  t.same(merged.data, { mode: 'draw', tools: { pen: 1, eraser: 2 } }, 'merge keeps the other keys (v1 alias)');

  await broadcast(api, credentials, '/v2/livestate/broadcast', { liveStateDataId: 'cursor-mode', data: { mode: 'select' } });
  const replaced = await live.next((v) => (v.data as { mode: string }).mode === 'select');
  t.same(replaced.data, { mode: 'select' }, 'without merge the value is replaced');
  await broadcast(api, credentials, '/v2/livestate/broadcast', { liveStateDataId: 'banner', data: 'deploy at 5' });
  await live.next((v) => v.liveStateDataId === 'banner');

  const late = liveStateClient(t, url, token);
  const lateMode = await late.next((v) => v.liveStateDataId === 'cursor-mode');
  const lateBanner = await late.next((v) => v.liveStateDataId === 'banner');
  t.same([lateMode.data, lateBanner.data], [{ mode: 'select' }, 'deploy at 5'], 'a late joiner gets every current value');
  t.equal(plain.received.length, 0, 'a client without ext=1 is sent no extension frame');
});

t.test('live state survives a restart and goes with its document', async (t) => {
  const first = await startTestServer(t);
  const credentials = await first.api.createWorkspace();
  await broadcast(first.api, credentials, '/v2/livestate/broadcast', { liveStateDataId: 'kept', data: { n: 1 } });
  const second = await first.restart();
  const token = await userToken(second.api, credentials, [editorOf(room)]);
  const joiner = liveStateClient(t, second.url, token);
  t.same((await joiner.next((v) => v.liveStateDataId === 'kept')).data, { n: 1 });
  joiner.provider.destroy();

  await second.api.call(credentials, '/v2/organizations/documents/add', { organizationId: room.organizationId, documents: [{ documentId: room.documentId }] });
  const deleted = await second.api.call(credentials, '/v2/organizations/documents/delete', { organizationId: room.organizationId, documentIds: [room.documentId] });
  t.equal(deleted.status, 200);
  const after = liveStateClient(t, second.url, token);
  await after.synced();
  // The marker broadcast is sent after the join: had the deleted value survived, it would have arrived first.
  await broadcast(second.api, credentials, '/v2/livestate/broadcast', { liveStateDataId: 'marker', data: true });
  await after.next((v) => v.liveStateDataId === 'marker');
  t.same(after.received.map((v) => v.liveStateDataId), ['marker'], 'the deleted document’s value is gone');
});

t.test('bad broadcasts are INVALID_ARGUMENT naming the field; limits hold', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const missing = await broadcast(api, credentials, '/v2/livestate/broadcast', { data: {} });
  t.equal(missing.status, 400);
  t.match(missing.body.error?.message, /liveStateDataId/);
  const noData = await broadcast(api, credentials, '/v2/livestate/broadcast', { liveStateDataId: 'x' });
  t.match(noData.body.error?.message, /data/);
  const big = await broadcast(api, credentials, '/v2/livestate/broadcast', { liveStateDataId: 'x', data: 'x'.repeat(70 * 1024) });
  t.equal(big.status, 400);
  t.match(big.body.error?.message, /bytes/);
  const badMerge = await broadcast(api, credentials, '/v2/livestate/broadcast', { liveStateDataId: 'x', data: 1, merge: 'yes' });
  t.match(badMerge.body.error?.message, /merge/);
  for (let i = 0; i < 100; i++) await broadcast(api, credentials, '/v2/livestate/broadcast', { liveStateDataId: `id-${i}`, data: i });
  const tooMany = await broadcast(api, credentials, '/v2/livestate/broadcast', { liveStateDataId: 'one-more', data: 1 });
  t.equal(tooMany.status, 400);
  t.match(tooMany.body.error?.message, /at most 100/);
  const overwrite = await broadcast(api, credentials, '/v2/livestate/broadcast', { liveStateDataId: 'id-5', data: 'again' });
  t.equal(overwrite.status, 200, 'an existing id may still change');
});

t.test('mergeLiveState treats __proto__ as data', async (t) => {
  const merged = mergeLiveState({ a: 1 }, JSON.parse('{"__proto__": {"polluted": true}, "b": 2}')) as Record<string, unknown>;
  t.equal(({} as Record<string, unknown>)['polluted'], undefined, 'no prototype pollution');
  t.equal(Object.getPrototypeOf(merged), Object.prototype);
  t.same(Object.keys(merged), ['a', '__proto__', 'b']);
  t.same(mergeLiveState({ list: [1, 2] }, { list: [3] }), { list: [3] }, 'arrays replace');
});
