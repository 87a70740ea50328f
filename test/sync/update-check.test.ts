// Tests src/sync/update-check.ts against Y.decodeUpdate: the same answer on real updates of every content kind and on their corruptions.
import t from 'tap';
import * as Y from 'yjs';
import { checkUpdate } from '../../src/sync/update-check.js';

/** Deterministic, so a failure names a reproducible case. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function decodes(bytes: Uint8Array): boolean {
  try {
    Y.decodeUpdate(bytes);
    return true;
  } catch {
    // The reference answer: Yjs could not decode these bytes.
    return false;
  }
}

/** Updates of every content kind Yjs writes: strings, deletes, formats, embeds, maps of every any type, arrays, XML, JSON, binary. */
function sampleUpdates(): Uint8Array[] {
  const doc = new Y.Doc();
  const updates: Uint8Array[] = [];
  doc.on('update', (update: Uint8Array) => updates.push(update));
  const text = doc.getText('content');
  text.insert(0, 'héllo wörld 👋 ');
  text.format(0, 5, { bold: true, link: { href: 'https://example.com' } });
  text.insertEmbed(3, { image: 'x.png' });
  text.delete(2, 4);
  const map = doc.getMap('meta');
  map.set('n', 42);
  map.set('neg', -123456789);
  map.set('big', 2 ** 40);
  map.set('f', 1.5);
  map.set('s', 'str');
  map.set('t', true);
  map.set('nil', null);
  map.set('obj', { a: [1, 'two', { three: 3 }], b: new Uint8Array([1, 2, 3]) });
  map.set('bin', new Uint8Array([9, 8, 7]));
  map.set('nested', new Y.Map());
  map.delete('s');
  const array = doc.getArray('list');
  array.insert(0, [1, 2, 3, 'four']);
  array.insert(1, [new Y.Text('inner')]);
  const xml = doc.getXmlFragment('xml');
  const element = new Y.XmlElement('p');
  element.setAttribute('class', 'lead');
  element.insert(0, [new Y.XmlText('para')]);
  xml.insert(0, [element]);
  doc.getMap('hooks').set('h', new Y.XmlHook('hook'));
  const legacy = new Y.Doc();
  legacy.on('update', (update: Uint8Array) => updates.push(update));
  legacy.getArray('old').insert(0, [new Uint8Array([1])]);
  updates.push(Y.encodeStateAsUpdate(doc));
  // ContentJSON, written by old clients and still read: client 1 clock 0, root "k", the entries "x" and undefined.
  updates.push(Uint8Array.of(1, 1, 1, 0, 2, 1, 1, 0x6b, 2, 3, 0x22, 0x78, 0x22, 9, ...new TextEncoder().encode('undefined'), 0));
  return updates;
}

t.test('every real update is valid, and so says Yjs', async (t) => {
  for (const update of sampleUpdates()) {
    t.equal(checkUpdate(update), 'valid');
    t.ok(decodes(update));
  }
  t.equal(checkUpdate(new Uint8Array([0, 0])), 'valid', 'the empty update');
});

t.test('corrupted updates: the walk answers as Y.decodeUpdate does', async (t) => {
  const next = random(18);
  const samples = sampleUpdates();
  let invalid = 0;
  let cases = 0;
  for (const update of samples) {
    // Every truncation.
    for (let end = 0; end < update.length; end++) {
      const cut = update.subarray(0, end);
      const answer = checkUpdate(cut);
      if (answer !== 'unsure' && answer === 'valid' !== decodes(cut)) t.fail(`truncated to ${end} of ${update.length}: walk says ${answer}`);
      if (answer === 'invalid') invalid++;
      cases++;
    }
    // Random byte changes.
    for (let i = 0; i < 300; i++) {
      const bytes = update.slice();
      const changes = 1 + Math.floor(next() * 3);
      for (let c = 0; c < changes; c++) bytes[Math.floor(next() * bytes.length)] = Math.floor(next() * 256);
      const answer = checkUpdate(bytes);
      if (answer !== 'unsure' && answer === 'valid' !== decodes(bytes)) t.fail(`mutation ${i} of a ${update.length}-byte update: walk says ${answer}, Yjs ${decodes(bytes)} (${Buffer.from(bytes).toString('hex')})`);
      if (answer === 'invalid') invalid++;
      cases++;
    }
  }
  t.ok(invalid > cases / 4, `the corruptions include many the walk refuses (${invalid} of ${cases})`);
});

t.test('invalid UTF-8 in a string, JSON that does not parse, an unknown type ref are refused', async (t) => {
  const doc = new Y.Doc();
  doc.getText('content').insert(0, 'ab');
  const update = Y.encodeStateAsUpdate(doc);
  const at = update.indexOf(0x61); // 'a' of the content string
  const broken = update.slice();
  broken[at] = 0xff;
  t.equal(checkUpdate(broken), 'invalid');
  t.notOk(decodes(broken), 'Yjs agrees');
  t.equal(checkUpdate(new Uint8Array([1, 1, 5, 0, 0x0e])), 'invalid', 'content ref 14 does not exist');
});

t.test('a subdocument is left to Yjs to judge', async (t) => {
  const doc = new Y.Doc();
  doc.getMap('docs').set('sub', new Y.Doc());
  t.equal(checkUpdate(Y.encodeStateAsUpdate(doc)), 'unsure');
});
