// Tests the registry's holds: deletes and migrations of the same documents take turns, never wait in a cycle; acquirers wait.
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { DocumentActors } from '../../src/doc/registry.js';
import { AppError, CLOSE } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { FakeHub } from '../helpers/fake-peer.js';

const A = { apiKey: 'key', organizationId: 'org', documentId: 'a' };
const B = { apiKey: 'key', organizationId: 'org', documentId: 'b' };
const ELSEWHERE = { apiKey: 'key', organizationId: 'org2', documentId: 'c' };

function open(t: Test): DocumentActors {
  const dir = t.testdir();
  const store = Store.open(dir);
  const registry = new DocumentActors(loadConfig({}, [], { dataDir: dir, groupCommitMs: 0 }), store, createLogger('silent'), new FakeHub());
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  return registry;
}

/** A promise and its resolve: the work of a hold runs until the test lets it end. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

t.test('a delete waits for a migration holding its document, a migration for a delete, each in turn', async (t) => {
  const registry = open(t);
  const order: string[] = [];
  const migrationGate = gate();
  const migration = registry.exclusively([A, B], CLOSE.DOCUMENT_MOVED, 'moved to b', async () => {
    await migrationGate.opened;
    order.push('migration');
  });
  const deleting = registry.whileDeleting({ documents: [A] }, async () => {
    order.push('delete');
  });
  t.equal(registry.holds.of(A)?.kind, 'migration', 'the delete has not taken its hold while the migration holds the document');
  migrationGate.open();
  await Promise.all([migration, deleting]);
  t.same(order, ['migration', 'delete'], 'the delete ran once the migration was done');

  const deleteGate = gate();
  const second = registry.whileDeleting({ organizations: [{ apiKey: 'key', organizationId: 'org' }] }, async () => {
    await deleteGate.opened;
    order.push('organization delete');
  });
  const later = registry.exclusively([B], CLOSE.DOCUMENT_MOVED, 'moved', async () => {
    order.push('second migration');
  });
  t.equal(registry.holds.of(B)?.kind, 'delete', 'a migration of a document of an organization being deleted waits');
  deleteGate.open();
  await Promise.all([second, later]);
  t.same(order.slice(2), ['organization delete', 'second migration']);
  t.equal(registry.holds.of(A), undefined, 'nothing is held afterwards');
});

t.test('overlapping deletes take turns, one elsewhere does not wait, and none waits in a cycle', async (t) => {
  const registry = open(t);
  const order: string[] = [];
  const firstGate = gate();
  const first = registry.whileDeleting({ documents: [A, B] }, async () => {
    await firstGate.opened;
    order.push('documents');
  });
  const organization = registry.whileDeleting({ organizations: [{ apiKey: 'key', organizationId: 'org' }] }, async () => {
    order.push('organization');
  });
  const folder = registry.whileDeleting({ documents: [B, A] }, async () => {
    order.push('folder');
  });
  await registry.whileDeleting({ documents: [ELSEWHERE] }, async () => {
    order.push('elsewhere');
  });
  t.same(order, ['elsewhere'], 'a delete of another organization ran at once');
  firstGate.open();
  await Promise.all([first, organization, folder]);
  t.same(order.slice(0, 2), ['elsewhere', 'documents']);
  t.same(order.slice(2).sort(), ['folder', 'organization'], 'both waiting deletes ran after it');
});

t.test('acquirers wait on a hold: a sync connection is refused after a delete, a request runs after it on a fresh document', async (t) => {
  const registry = open(t);
  const deleteGate = gate();
  const waited: string[] = [];
  registry.holds.onWait((key) => waited.push(key.documentId));
  const deleting = registry.whileDeleting({ organizations: [{ apiKey: 'key', organizationId: 'org' }] }, () => deleteGate.opened);
  const connection = registry.acquire(A);
  const request = registry.use(B, (actor) => actor.key.documentId);
  t.same(waited.sort(), ['a', 'b'], 'both wait on the organization hold, neither loaded');
  t.equal(registry.loadedCount, 0);
  deleteGate.open();
  await deleting;
  const refused = await connection.then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(refused instanceof AppError && refused.status === 'NOT_FOUND', 'the connection is refused: the document was deleted');
  t.equal(await request, 'b', 'the request ran once the delete was done');

  const failing = registry.whileDeleting({ documents: [A] }, () => Promise.reject(new Error('an owner failed')));
  const retried = registry.acquire(A);
  await t.rejects(failing, { message: 'an owner failed' });
  const lease = await retried;
  t.equal(lease.actor.key.documentId, 'a', 'a failed delete keeps the document: a connection waiting on it goes on');
  lease.release();
});
