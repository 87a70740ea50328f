// Tests API_KEY_BYTES_PER_SECOND and API_KEY_SYNC_MESSAGES_PER_SECOND as clients meet them: REST bodies get 429 with Retry-After, a sync socket is closed with 1013 and its client resyncs; other keys are untouched.
import t, { type Test } from 'tap';
import type { Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { limitRefusals } from '../../src/metrics/instruments.js';
import { startServer } from '../../src/server.js';
import { ApiClient, type Credentials } from '../helpers/api.js';
import { testConfig } from '../helpers/server.js';
import { connect, editorOf, nextClose, synced, userToken, whenDocs, type Client, type Room } from '../helpers/sync.js';

// 16 KiB a second; with frames and bodies of at most 64 KiB the bucket holds 8 seconds' worth, 128 KiB.
const LIMITS: Partial<Config> = { apiKeyBytesPerSecond: 16 * 1024, maxBodyBytes: 64 * 1024, wsMaxPayloadBytes: 64 * 1024 };

async function start(t: Test, limits: Partial<Config> = LIMITS): Promise<{ api: ApiClient; url: string; advance: (ms: number) => void }> {
  let time = Date.now();
  // The budget reads this clock: it refills only when the test moves it. Sockets and timers run on the system's.
  const server = await startServer(testConfig(t.testdir(), limits), createLogger('silent'), { clock: { now: () => time } });
  t.teardown(() => server.stop());
  const url = `http://127.0.0.1:${server.port}`;
  return { api: new ApiClient(url), url, advance: (ms) => (time += ms) };
}

const comment = (chars: number): unknown => ({
  organizationId: 'org',
  documentId: 'doc',
  commentAnnotations: [{ commentData: [{ commentText: 'x'.repeat(chars), from: { userId: 'u1' } }] }],
});

t.test('REST: a key past its bytes gets 429 RESOURCE_EXHAUSTED with Retry-After; small requests still fit, other keys are untouched', async (t) => {
  const { api, advance } = await start(t);
  const [a, b] = [await api.createWorkspace(), await api.createWorkspace()];
  const refusedBefore = limitRefusals.api_key_bytes;
  // ~20 KB bodies: six fit in 128 KiB, the seventh does not.
  for (let i = 0; i < 6; i++) t.equal((await api.call(a, '/v2/commentannotations/add', comment(20_000))).status, 200, `body ${i + 1} is served`);
  const refused = await api.call(a, '/v2/commentannotations/add', comment(20_000));
  t.equal(refused.status, 429);
  t.equal(refused.body.error?.status, 'RESOURCE_EXHAUSTED');
  t.match(refused.body.error?.message, /API_KEY_BYTES_PER_SECOND/);
  t.equal(refused.headers.get('retry-after'), '1', 'the seconds until the body would fit');
  t.equal(limitRefusals.api_key_bytes, refusedBefore + 1, 'counted (plait_limit_refusals_total{limit="api_key_bytes"})');
  t.equal((await api.call(a, '/v2/commentannotations/add', comment(10))).status, 200, 'a small body of the same key still fits');
  t.equal((await api.call(b, '/v2/commentannotations/add', comment(20_000))).status, 200, 'another key has its own budget');
  advance(1000);
  t.equal((await api.call(a, '/v2/commentannotations/add', comment(20_000))).status, 200, 'served once the refill covers it');
  const metrics = await (await fetch(`${api.baseUrl}/metrics`)).text();
  t.match(metrics, /plait_limit_refusals_total\{limit="api_key_bytes"\} [1-9]/);
});

/** Resolves with the code and reason of the client's next close by the server. */
async function pair(t: Test, api: ApiClient, url: string, credentials: Credentials, room: Room): Promise<[Client, Client]> {
  const token = await userToken(api, credentials, [editorOf(room)]);
  const clients: [Client, Client] = [connect(t, url, room, token), connect(t, url, room, token)];
  await Promise.all(clients.map(synced));
  return clients;
}

t.test('sync: the frame past the key\'s bytes closes its socket with 1013, nothing is lost: the client resyncs once the budget refills', async (t) => {
  const { api, url, advance } = await start(t);
  const room: Room = { organizationId: 'org', documentId: 'doc', editorId: 'main' };
  const [writer, reader] = await pair(t, api, url, await api.createWorkspace(), room);
  const [other, otherReader] = await pair(t, api, url, await api.createWorkspace(), room);
  const refusedBefore = limitRefusals.api_key_bytes;
  const closed = nextClose(writer);
  // Seven updates of ~20 KB, one frame each: 128 KiB takes six.
  for (let i = 0; i < 7; i++) writer.text.insert(writer.text.length, String(i).repeat(20_000));
  const close = await closed;
  t.equal(close.code, 1013, 'closed with 1013 (the stock client reconnects)');
  t.match(close.reason, /API_KEY_BYTES_PER_SECOND/);
  t.ok(limitRefusals.api_key_bytes > refusedBefore, 'counted');

  other.text.insert(0, 'unaffected');
  await whenDocs([otherReader.doc], () => otherReader.text.toString() === 'unaffected');
  t.pass('another key\'s edit goes through meanwhile');

  // The refused update was never applied; the reconnect's resync sends it again, and it is taken once it fits.
  advance(10_000);
  await whenDocs([reader.doc], () => reader.text.length === 140_000);
  t.equal(reader.text.toString(), writer.text.toString(), 'the reader has every update, the refused one included');
});

t.test('sync: the message past the key\'s sync messages a second closes its socket with 1013; the client resyncs, another key goes on', async (t) => {
  // 10 a second, bursts of 20; the bytes are not what is limited here.
  const { api, url, advance } = await start(t, { apiKeySyncMessagesPerSecond: 10 });
  const room: Room = { organizationId: 'org', documentId: 'doc', editorId: 'main' };
  const [writer, reader] = await pair(t, api, url, await api.createWorkspace(), room);
  const [other, otherReader] = await pair(t, api, url, await api.createWorkspace(), room);
  const refusedBefore = limitRefusals.api_key_sync_messages;
  const closed = nextClose(writer);
  // Thirty one-character updates, one message each (the two pairs' handshakes took a few of the burst of 20).
  for (let i = 0; i < 30; i++) writer.text.insert(writer.text.length, String(i % 10));
  const close = await closed;
  t.equal(close.code, 1013, 'closed with 1013 (the stock client reconnects)');
  t.match(close.reason, /API_KEY_SYNC_MESSAGES_PER_SECOND/);
  t.ok(limitRefusals.api_key_sync_messages > refusedBefore, 'counted');

  other.text.insert(0, 'unaffected');
  await whenDocs([otherReader.doc], () => otherReader.text.toString() === 'unaffected');
  t.pass('another key\'s edit goes through meanwhile');

  advance(10_000);
  await whenDocs([reader.doc], () => reader.text.length === 30);
  t.equal(reader.text.toString(), writer.text.toString(), 'after the refill the reader has every update, the refused ones included');
});

t.test('sync: awareness frames are not charged to the key\'s bytes (cursors do not spend what edits need)', async (t) => {
  const { api, url } = await start(t);
  const room: Room = { organizationId: 'org', documentId: 'doc', editorId: 'main' };
  const [writer, reader] = await pair(t, api, url, await api.createWorkspace(), room);
  const refusedBefore = limitRefusals.api_key_bytes;
  // 20 states of ~10 KB: ~200 KB, more than the 128 KiB bucket, which the clock (frozen) never refills here.
  for (let n = 0; n < 20; n++) writer.provider.awareness.setLocalState({ n, pad: 'x'.repeat(10_000) });
  writer.text.insert(0, 'still editing');
  await whenDocs([reader.doc], () => reader.text.toString() === 'still editing');
  t.equal(limitRefusals.api_key_bytes, refusedBefore, 'nothing refused');
  t.equal((reader.provider.awareness.getStates().get(writer.doc.clientID) as { n?: number } | undefined)?.n, 19, 'every state went through');
});
