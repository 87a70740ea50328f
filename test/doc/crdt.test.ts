// Tests store type conversions (src/doc/crdt.ts, src/doc/xml.ts): minimal replacements, XML, type inference.
import t from 'tap';
import * as Y from 'yjs';
import { inferType, readData, replaceData as replaceOutside } from '../../src/doc/crdt.js';
import type { StoreType } from '../../src/store/snapshots.js';
import { parseXml, serializeXml, toYXml } from '../../src/doc/xml.js';

/** As the actor calls it: inside one transaction, so observers see one event per replacement. */
function replaceData(doc: Y.Doc, type: StoreType, key: string, data: unknown): string | undefined {
  let problem: string | undefined;
  doc.transact(() => {
    problem = replaceOutside(doc, type, key, data);
  });
  return problem;
}

function edits(doc: Y.Doc): unknown[] {
  const deltas: unknown[] = [];
  doc.getText('content').observe((event) => deltas.push(event.delta));
  return deltas;
}

t.test('text replacement keeps the common prefix and suffix and never splits a surrogate pair', async (t) => {
  const doc = new Y.Doc();
  t.equal(replaceData(doc, 'text', 'content', 'The quick fox'), undefined);
  const deltas = edits(doc);
  replaceData(doc, 'text', 'content', 'The slow fox');
  t.same(deltas, [[{ retain: 4 }, { delete: 5 }, { insert: 'slow' }]]);
  replaceData(doc, 'text', 'content', 'a😀b');
  replaceData(doc, 'text', 'content', 'a😃b');
  t.equal(readData(doc, 'text', 'content'), 'a😃b');
});

t.test('a REST replacement and a concurrent client edit elsewhere both survive and replicas converge', async (t) => {
  const server = new Y.Doc();
  replaceData(server, 'text', 'content', 'alpha beta gamma');
  const client = new Y.Doc();
  Y.applyUpdate(client, Y.encodeStateAsUpdate(server));
  client.getText('content').insert(16, ' delta');
  replaceData(server, 'text', 'content', 'ALPHA beta gamma');
  Y.applyUpdate(client, Y.encodeStateAsUpdate(server));
  Y.applyUpdate(server, Y.encodeStateAsUpdate(client));
  t.equal(server.getText('content').toString(), 'ALPHA beta gamma delta');
  t.equal(client.getText('content').toString(), server.getText('content').toString());
});

t.test('map and array replacement touch only what changed', async (t) => {
  const doc = new Y.Doc();
  replaceData(doc, 'map', 'content', { a: 1, b: { deep: [1, 2] }, c: 'gone' });
  const changed: string[] = [];
  doc.getMap('content').observe((event) => changed.push(...event.keysChanged));
  replaceData(doc, 'map', 'content', { a: 1, b: { deep: [1, 2] }, d: true });
  t.same(changed.sort(), ['c', 'd']);
  t.same(readData(doc, 'map', 'content'), { a: 1, b: { deep: [1, 2] }, d: true });

  replaceData(doc, 'array', 'list', [1, 2, 3, 4]);
  const deltas: unknown[] = [];
  doc.getArray('list').observe((event) => deltas.push(event.delta));
  replaceData(doc, 'array', 'list', [1, 9, 4]);
  t.same(deltas, [[{ retain: 1 }, { insert: [9] }, { delete: 2 }]]);
  t.same(readData(doc, 'array', 'list'), [1, 9, 4]);
});

t.test('mismatched data and conflicting roots are reported, not applied', async (t) => {
  const doc = new Y.Doc();
  t.equal(replaceData(doc, 'text', 'content', 42), 'Data must be a string for type text.');
  t.equal(replaceData(doc, 'array', 'content', {}), 'Data must be an array for type array.');
  replaceData(doc, 'text', 'content', 'x');
  t.match(replaceData(doc, 'map', 'content', {}), /not of type map/);
  t.match(replaceData(doc, 'xml', 'other', '<a><b></a>'), /not well-formed/);
  t.equal(readData(doc, 'text', 'content'), 'x');
});

t.test('XML parses, builds Yjs types and serializes back with escaping', async (t) => {
  const source = '<heading level="1">Title &amp; more</heading><paragraph>one <b/> &lt;two&gt;</paragraph>tail';
  const parsed = parseXml(source);
  t.ok(parsed.ok);
  const doc = new Y.Doc();
  const fragment = doc.getXmlFragment('content');
  if (parsed.ok) fragment.insert(0, toYXml(parsed.nodes));
  t.equal(serializeXml(fragment), '<heading level="1">Title &amp; more</heading><paragraph>one <b></b> &lt;two&gt;</paragraph>tail');
  t.notOk(parseXml('<a>').ok, 'unclosed');
  t.notOk(parseXml('</a>').ok, 'stray close');
  t.notOk(parseXml('<a x=1></a>').ok, 'unquoted attribute');
  t.ok(parseXml('<!-- c --><?pi?><![CDATA[<raw>]]>').ok, 'comments, PIs and CDATA');
});

t.test('the type of a root defined only by remote updates is inferred from its content', async (t) => {
  const kinds = { text: 'hi', map: { k: 1 }, array: [1], xml: '<p>x</p>' } as const;
  for (const [type, data] of Object.entries(kinds)) {
    const source = new Y.Doc();
    replaceData(source, type as keyof typeof kinds, 'content', data);
    const remote = new Y.Doc();
    Y.applyUpdate(remote, Y.encodeStateAsUpdate(source));
    t.equal(inferType(remote, 'content'), type, type);
    t.same(readData(remote, null, 'content'), data, `${type} reads back without a recorded type`);
  }
  t.equal(inferType(new Y.Doc(), 'content'), null, 'nothing there');
});
