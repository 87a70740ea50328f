// Tests API_KEY_AWARENESS_BYTES_PER_SECOND: past a key's awareness bytes (times the connections they reach) its frames are dropped; other keys' are not.
import t, { type Test } from 'tap';
import { limitRefusals } from '../../src/metrics/instruments.js';
import type { ApiClient } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, synced, userToken, whenDocs, type Client, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org', documentId: 'doc', editorId: 'main' };

async function pair(t: Test, api: ApiClient, url: string): Promise<[Client, Client]> {
  const token = await userToken(api, await api.createWorkspace(), [editorOf(room)]);
  const clients: [Client, Client] = [connect(t, url, room, token), connect(t, url, room, token)];
  await Promise.all(clients.map(synced));
  return clients;
}

/** The `n` of `from`'s awareness state as `to` sees it (-1: none yet). */
const seen = (to: Client, from: Client): number => {
  const state = to.provider.awareness.getStates().get(from.doc.clientID) as { n?: number } | undefined;
  return state?.n ?? -1;
};

/** Resolves once everything `writer` sent before now has been handled: its next edit reached `reader`. */
async function barrier(writer: Client, reader: Client, mark: string): Promise<void> {
  writer.text.insert(writer.text.length, mark);
  await whenDocs([reader.doc], () => reader.text.toString().endsWith(mark));
}

t.test('a key past its awareness bytes has its frames dropped; another key on the same server is untouched', async (t) => {
  // 4 KiB a second: a bucket of 32 KiB (more than its floor, one largest state to every connection a document takes: 4 KiB). Each frame below is ~900 bytes sent to 2 connections, ~1.8 KB: ~18 fit.
  const { api, url } = await startTestServer(t, { apiKeyAwarenessBytesPerSecond: 4096, awarenessMaxStateBytes: 1024, awarenessUpdatesPerSecond: 1000, maxConnectionsPerDocument: 4 });
  const [a, b] = await pair(t, api, url);
  const refusedBefore = limitRefusals.api_key_awareness_bytes;
  const pad = 'x'.repeat(800);
  for (let n = 0; n < 40; n++) a.provider.awareness.setLocalState({ n, pad });
  await barrier(a, b, '.');
  t.ok(limitRefusals.api_key_awareness_bytes > refusedBefore, 'refusals counted (plait_limit_refusals_total{limit="api_key_awareness_bytes"})');
  const last = seen(b, a);
  t.ok(last >= 10 && last < 39, `the reader saw the states up to the budget, not the last (n = ${last})`);

  const [c, d] = await pair(t, api, url);
  c.provider.awareness.setLocalState({ n: 7, pad });
  await barrier(c, d, '.');
  t.equal(seen(d, c), 7, 'another key\'s awareness goes through');
});
