// Tests the editor-store table: lookups, insertion order, and deleting the first store.
import t from 'tap';
import { EditorDoc } from '../../src/doc/editor-doc.js';
import { EditorDocs } from '../../src/doc/editor-docs.js';

const key = { apiKey: 'key', organizationId: 'org', documentId: 'doc' };
const ids = (stores: EditorDocs): string[] => [...stores.values()].map((store) => store.editorId);

t.test('behaves as a Map by editor id, in insertion order', (t) => {
  const stores = new EditorDocs();
  t.equal(stores.get('a'), undefined);
  t.same(ids(stores), []);
  const [a, b, c] = ['a', 'b', 'c'].map((id) => new EditorDoc(key, id));
  for (const store of [a, b, c]) stores.add(store as EditorDoc);
  t.equal(stores.get('a'), a);
  t.equal(stores.get('c'), c);
  t.same(ids(stores), ['a', 'b', 'c']);
  t.throws(() => stores.add(new EditorDoc(key, 'b')), 'one store per editor id');

  stores.delete('a');
  t.same(ids(stores), ['b', 'c'], 'the oldest remaining store comes first');
  t.equal(stores.get('a'), undefined);
  t.equal(stores.get('b'), b);
  stores.delete('c');
  stores.delete('missing');
  t.same(ids(stores), ['b']);
  stores.delete('b');
  t.same(ids(stores), []);
  stores.add(c as EditorDoc);
  t.same(ids(stores), ['c'], 'usable again once empty');
  stores.clear();
  t.same(ids(stores), []);
  t.end();
});
