// Tests that a document's comment threads and presence count in the loaded-documents budget: past a key's share of bytes its documents are unloaded, and they come back whole.
import t from 'tap';
import { budgetCounts } from '../../src/metrics/instruments.js';
import { startTestServer } from '../helpers/server.js';

const LIMIT = 256 * 1024;
const DOCUMENTS = 24;

t.test("one key's comment threads on many documents are counted, and unloaded past its share of bytes", async (t) => {
  const server = await startTestServer(t, { docIdleUnloadMs: 3_600_000, maxLoadedDocumentBytesPerKey: LIMIT });
  const credentials = await server.api.createWorkspace();
  const actors = server.server.services.documentActors;
  const early = budgetCounts.unloadedEarly;
  // ~40 KB of comments as JSON a document, no CRDT content at all: before, each counted 0 bytes and all stayed loaded.
  const threads = Array.from({ length: 10 }, () => ({ commentData: Array.from({ length: 10 }, (_, c) => ({ commentText: 'x'.repeat(300), from: { userId: `u${c}` } })) }));
  const statuses: number[] = [];
  for (let d = 0; d < DOCUMENTS; d++) {
    statuses.push((await server.api.call(credentials, '/v2/commentannotations/add', { organizationId: 'org', documentId: `d${d}`, commentAnnotations: threads })).status);
  }
  t.same(new Set(statuses), new Set([200]), 'every add answered 200');
  const { loadedBytes } = actors.stats();
  t.ok(loadedBytes > 0 && loadedBytes <= LIMIT, `the threads are counted, within the key's share: ${loadedBytes} bytes`);
  const unloaded = budgetCounts.unloadedEarly - early;
  t.ok(unloaded >= DOCUMENTS - Math.ceil(LIMIT / 40_000), `the key's least recently used documents went early: ${unloaded} of ${DOCUMENTS}`);
  const first = await server.api.call<unknown[]>(credentials, '/v2/commentannotations/get', { organizationId: 'org', documentId: 'd0' });
  t.equal(first.body.result?.data.length, 10, 'an unloaded document comes back with every thread');
});

t.test("one key's presence lists on many documents are counted the same way", async (t) => {
  const server = await startTestServer(t, { docIdleUnloadMs: 3_600_000, maxLoadedDocumentBytesPerKey: LIMIT });
  const credentials = await server.api.createWorkspace();
  const actors = server.server.services.documentActors;
  const early = budgetCounts.unloadedEarly;
  const users = Array.from({ length: 200 }, (_, u) => ({ userId: `user-${u}`, name: `User number ${u}`, email: `user-${u}@example.com`, status: 'online' }));
  const statuses: number[] = [];
  for (let d = 0; d < DOCUMENTS; d++) statuses.push((await server.api.call(credentials, '/v2/presence/add', { organizationId: 'org', documentId: `d${d}`, users })).status);
  t.same(new Set(statuses), new Set([200]), 'every add answered 200');
  const { loadedBytes } = actors.stats();
  t.ok(loadedBytes > 0 && loadedBytes <= LIMIT, `the presence records are counted, within the key's share: ${loadedBytes} bytes`);
  t.ok(budgetCounts.unloadedEarly - early >= DOCUMENTS / 2, `documents went early: ${budgetCounts.unloadedEarly - early} of ${DOCUMENTS}`);
});
