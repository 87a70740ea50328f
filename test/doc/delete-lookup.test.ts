// Tests that deleting documents finds their loaded state by key: no walk of every loaded document (every tenant's) per document deleted.
import t, { type Test } from 'tap';
import { startTestServer } from '../helpers/server.js';

/** Counts the entries read by iterating `map` (entries, values, keys, for-of, spread) from now on. */
function countIterated(t: Test, map: Map<unknown, unknown>): { readonly count: number } {
  const counter = { count: 0 };
  const wrap = <K extends 'entries' | 'values' | 'keys'>(name: K): void => {
    const original = map[name].bind(map) as () => IterableIterator<unknown>;
    (map as unknown as Record<K, () => IterableIterator<unknown>>)[name] = function* () {
      for (const item of original()) {
        counter.count++;
        yield item;
      }
    };
    t.teardown(() => {
      (map as unknown as Record<K, () => IterableIterator<unknown>>)[name] = original;
    });
  };
  wrap('entries');
  wrap('values');
  wrap('keys');
  const iterator = map[Symbol.iterator].bind(map);
  map[Symbol.iterator] = map.entries;
  t.teardown(() => {
    map[Symbol.iterator] = iterator;
  });
  return counter;
}

t.test("a folder's deletion reads the loaded state of its own documents only, whatever else is loaded", async (t) => {
  const server = await startTestServer(t, { docIdleUnloadMs: 3_600_000 });
  const other = await server.api.createWorkspace();
  const owner = await server.api.createWorkspace();
  const offline = [{ userId: 'gone', status: 'offline' }];
  // Another workspace's 300 loaded documents, each with presence (an armed expiry timer where a user is offline).
  for (let d = 0; d < 300; d += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, i) => server.api.call(other, '/v2/presence/add', { organizationId: 'o', documentId: `x${d + i}`, users: offline })));
  }
  await server.api.call(owner, '/v2/organizations/folders/add', { organizationId: 'org', folders: [{ folderId: 'f' }], createOrganization: true });
  await server.api.call(owner, '/v2/organizations/documents/add', { organizationId: 'org', folderId: 'f', documents: Array.from({ length: 20 }, (_, i) => ({ documentId: `d${i}` })) });
  for (let i = 0; i < 20; i++) await server.api.call(owner, '/v2/presence/add', { organizationId: 'org', documentId: `d${i}`, users: offline });
  const { documentActors, collab } = server.server.services;
  t.ok(documentActors.loadedCount >= 320, `${documentActors.loadedCount} documents loaded`);
  const internals = (object: object, field: string): Map<unknown, unknown> => (object as unknown as Record<string, Map<unknown, unknown>>)[field] as Map<unknown, unknown>;
  const loaded = countIterated(t, internals(documentActors, 'entries'));
  const armed = countIterated(t, internals(collab, 'armed'));
  t.ok(internals(collab, 'armed').size >= 320, 'every one of them has an armed expiry timer');

  const res = await server.api.call(owner, '/v2/organizations/folders/delete', { organizationId: 'org', folderId: 'f' });
  t.equal(res.status, 200);
  t.equal(loaded.count, 0, 'no walk of the loaded documents');
  t.equal(armed.count, 0, 'nor of the armed timers');
  t.equal(documentActors.peek({ apiKey: owner.apiKey, organizationId: 'org', documentId: 'd0' }), undefined, 'the deleted documents are unloaded');
  t.ok(documentActors.peek({ apiKey: other.apiKey, organizationId: 'o', documentId: 'x0' }) !== undefined, "the other workspace's stay");
});
