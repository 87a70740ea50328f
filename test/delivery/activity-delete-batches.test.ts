// Tests activities/delete with a filter over more rows than a scan chunk and more matches than a write batch: every match answered, immutable ones kept, in batches.
import t from 'tap';
import type { ActivityRecord } from '../../src/delivery/activity-store.js';
import { CHUNK_ROWS, WRITE_BATCH } from '../../src/store/chunked-scan.js';
import { startTestServer } from '../helpers/server.js';
import { countingTransactions } from '../helpers/store.js';

const ORG = 'org-a';

t.test('a delete by document over more than a write batch answers every match, keeps the immutable ones and the other documents', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const { apiKey } = credentials;
  const { delivery, store } = server.server.services;
  const total = CHUNK_ROWS + WRITE_BATCH + 30;
  await store.transaction((tx) => {
    for (let i = 0; i < total; i++) {
      const record: ActivityRecord = {
        id: `a${String(i).padStart(5, '0')}`,
        featureType: 'custom',
        actionType: 'edited',
        actionUser: { userId: 'u1' },
        displayMessageTemplate: 'x',
        displayMessageTemplateData: {},
        metadata: { apiKey, organizationId: ORG, documentId: i % 4 === 0 ? 'doc-keep' : 'doc-gone' },
        timestamp: 1_000 + i,
        origin: i % 50 === 1 ? 'event' : 'api',
        immutable: i % 50 === 1,
      };
      delivery.activities.put(tx, record);
    }
  });
  const gone = Array.from(delivery.activities.all(apiKey, ORG)).filter((a) => a.metadata.documentId === 'doc-gone');
  const immutable = gone.filter((a) => a.immutable).map((a) => a.id);
  t.ok(gone.length > WRITE_BATCH && immutable.length > 0, `${gone.length} matches, ${immutable.length} of them immutable`);

  const { result: answer, transactions } = await countingTransactions(store, () => server.api.call<Record<string, { success: boolean; message: string }>>(credentials, '/v2/activities/delete', { organizationId: ORG, documentId: 'doc-gone' }));
  t.equal(answer.status, 200);
  const data = answer.body.result?.data ?? {};
  t.equal(Object.keys(data).length, gone.length, 'one answer per match');
  t.same(Object.entries(data).filter(([, a]) => !a.success).map(([id]) => id).sort(), immutable, 'the immutable ones answer failure');
  t.ok(transactions >= Math.ceil(gone.length / WRITE_BATCH), `in batches (${transactions} transactions)`);
  const left = Array.from(delivery.activities.all(apiKey, ORG));
  t.same(left.filter((a) => a.metadata.documentId === 'doc-gone').map((a) => a.id).sort(), immutable, 'only the immutable ones of the document stay');
  t.equal(left.filter((a) => a.metadata.documentId === 'doc-keep').length, Math.ceil(total / 4), 'the other document keeps all of its');
});
