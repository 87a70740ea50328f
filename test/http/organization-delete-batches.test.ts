// Tests deleting an organization larger than one removal batch: bounded transactions one after another, the organization entry last, nothing of it left, other organizations untouched.
import t from 'tap';
import type { NotificationRecord } from '../../src/delivery/notification-store.js';
import { REMOVE_BATCH } from '../../src/store/chunked-scan.js';
import { DB } from '../../src/store/keys.js';
import { startTestServer } from '../helpers/server.js';

const BIG = 'org-big';
const SMALL = 'org-small';

t.test('an organization of more rows than a removal batch goes in several transactions, its entry last, and entirely', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const { apiKey } = credentials;
  const { directory, delivery, store } = server.server.services;
  const documents = REMOVE_BATCH + 500;
  for (let first = 0; first < documents; first += 1000) {
    await directory.documents.add(apiKey, BIG, Array.from({ length: Math.min(1000, documents - first) }, (_, i) => ({ documentId: `d${first + i}` })));
  }
  await directory.documents.add(apiKey, SMALL, [{ documentId: 'keep' }]);
  await store.transaction((tx) => {
    for (let i = 0; i < REMOVE_BATCH + 10; i++) {
      const users = { bob: true as const };
      const note: NotificationRecord = {
        id: `n${i}`,
        notificationSource: 'custom',
        notificationSourceData: {},
        actionUser: null,
        displayBodyMessage: '',
        displayHeadlineMessageTemplate: 'custom',
        displayHeadlineMessageTemplateData: {},
        metadata: { apiKey, organizationId: i % 2 === 0 ? BIG : SMALL, documentId: 'd1' },
        notifyUsers: users,
        notifyUsersByUserId: users,
        notifyAll: false,
        readByUserIds: [],
        timestamp: 1_000 + i,
      };
      delivery.notifications.put(tx, note);
    }
  });

  // Told after each committed directory write: what a reader saw between the batches.
  const seen: Array<{ organization: boolean; documents: number }> = [];
  directory.onChange((key, organizations) => {
    if (key !== apiKey || !organizations.has(BIG)) return;
    const page = directory.documents.get(apiKey, BIG, { pageSize: documents + 1 });
    seen.push({ organization: directory.organizations.find(apiKey, BIG) !== undefined, documents: page.rows.length });
  });

  const reply = await server.api.call<Record<string, { success: boolean }>>(credentials, '/v2/organizations/delete', { organizationIds: [BIG] });
  t.equal(reply.body.result?.data[BIG]?.success, true, 'the delete succeeded');
  t.ok(seen.length > 2, `the directory rows went in ${seen.length} committed writes`);
  t.ok(seen.slice(0, -1).every((state) => state.organization), 'the organization entry stayed until the last write');
  t.ok(seen.some((state) => state.documents > 0 && state.documents < documents), 'a reader between batches saw the documents partly removed');
  t.same(seen.at(-1), { organization: false, documents: 0 }, 'after the last one, nothing');

  const left = Array.from(store.records<unknown>(DB.directory).getKeys({ start: [apiKey], end: [apiKey, new Uint8Array([0xff])] })).filter((key) => (key as unknown[])[2] === BIG);
  t.same(left, [], 'no directory row of the organization is left');
  t.same(Array.from(delivery.notifications.all(apiKey, BIG)), [], 'nor a notification');
  t.equal(Array.from(delivery.notifications.all(apiKey, SMALL)).length, (REMOVE_BATCH + 10) / 2, 'the other organization keeps its notifications');
  t.equal(directory.documents.find(apiKey, SMALL, 'keep')?.documentId, 'keep', 'and its documents');
  const again = await server.api.call<Record<string, { success: boolean; code?: string }>>(credentials, '/v2/organizations/delete', { organizationIds: [BIG] });
  t.equal(again.body.result?.data[BIG]?.code, 'not-found', 'a second delete finds nothing');
});
