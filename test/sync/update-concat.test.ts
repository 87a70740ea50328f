// Tests an update's shape (src/sync/update-check.ts) against Yjs's own decoding, and joining a client's updates (or a log tail's runs of them) by their bytes (src/sync/update-concat.ts).
import t from 'tap';
import fc from 'fast-check';
import * as Y from 'yjs';
import { updateShape } from '../../src/sync/update-check.js';
import { appendRun, concatRuns, concatUpdates } from '../../src/sync/update-concat.js';
import { updatesOf } from '../helpers/yjs.js';

/** One local edit of a random kind, on every kind of content Yjs writes into an update. */
type Edit = (doc: Y.Doc) => void;

const text = fc.string({ unit: fc.constantFrom('a', 'é', '€', '😀', '\n', 'z'), minLength: 1, maxLength: 8 });
const anyValue = fc.jsonValue({ maxDepth: 2 }).map((value) => (value === null ? 'null' : value));
const at = fc.double({ min: 0, max: 1, noNaN: true });
const position = (length: number, fraction: number): number => Math.floor(fraction * length);

const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.tuple(at, text).map(([where, value]): Edit => (doc) => doc.getText('text').insert(position(doc.getText('text').length, where), value)),
  fc.tuple(at, fc.integer({ min: 1, max: 4 })).map(([where, length]): Edit => (doc) => {
    const target = doc.getText('text');
    const from = position(target.length, where);
    if (target.length > from) target.delete(from, Math.min(length, target.length - from));
  }),
  fc.tuple(at, fc.integer({ min: 1, max: 4 })).map(([where, length]): Edit => (doc) => {
    const target = doc.getText('text');
    const from = position(target.length, where);
    if (target.length > from) target.format(from, Math.min(length, target.length - from), { bold: true });
  }),
  at.map((where): Edit => (doc) => doc.getText('text').insertEmbed(position(doc.getText('text').length, where), { image: 'x.png' })),
  fc.tuple(at, fc.array(anyValue, { minLength: 1, maxLength: 3 })).map(([where, values]): Edit => (doc) => doc.getArray('list').insert(position(doc.getArray('list').length, where), values)),
  fc.tuple(fc.constantFrom('a', 'b'), anyValue).map(([key, value]): Edit => (doc) => doc.getMap('map').set(key, value)),
  fc.constantFrom('a', 'b').map((key): Edit => (doc) => doc.getMap('map').set(key, new Uint8Array([1, 2, 3]))),
  fc.constantFrom('a', 'b').map((key): Edit => (doc) => doc.getMap('map').delete(key)),
  fc.constant<Edit>((doc) => {
    const element = new Y.XmlElement('p');
    element.insert(0, [new Y.XmlText('hi')]);
    doc.getXmlFragment('xml').insert(0, [element]);
  }),
  fc.constant<Edit>((doc) => doc.getMap('map').set('nested', new Y.Map())),
);


function state(doc: Y.Doc): string {
  const vector = [...Y.decodeStateVector(Y.encodeStateVector(doc))].sort((a, b) => a[0] - b[0]);
  const deletes = [...Y.createDeleteSetFromStructStore(doc.store).clients].sort((a, b) => a[0] - b[0]).map(([client, items]) => [client, items.map((item) => [item.clock, item.len])]);
  return JSON.stringify({
    vector,
    deletes,
    text: doc.getText('text').toDelta(),
    list: doc.getArray('list').toJSON(),
    // By key: a map's entries come in the order its doc integrated them, which follows the order of the clients in an update.
    map: Object.entries(doc.getMap('map').toJSON()).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    xml: doc.getXmlFragment('xml').toString(),
    pending: doc.store.pendingStructs !== null || doc.store.pendingDs !== null,
  });
}

t.test("an update's shape is what Yjs decodes from it", (t) => {
  fc.assert(
    fc.property(fc.array(edit, { minLength: 1, maxLength: 20 }), (edits) => {
      const doc = new Y.Doc();
      for (const update of updatesOf(doc, edits)) {
        const shape = updateShape(update);
        const decoded = Y.decodeUpdate(update);
        if (shape === undefined) return false;
        const deleting = decoded.ds.clients.size;
        if (shape.deleting !== deleting) return false;
        if (decoded.structs.length === 0) {
          if (shape.client !== undefined || shape.structs !== 0) return false;
          continue;
        }
        const [firstStruct] = decoded.structs;
        const length = decoded.structs.reduce((sum, struct) => sum + struct.length, 0);
        if (shape.client !== doc.clientID || shape.clock !== firstStruct?.id.clock || shape.length !== length || shape.structs !== decoded.structs.length) return false;
      }
      return true;
    }),
    { numRuns: 300 },
  );
  t.pass('300 random edit sequences: client, first clock, length, struct count and deletes agree');
  t.end();
});

t.test('a client\'s updates joined by their bytes bring a receiver where Y.mergeUpdates does', (t) => {
  let joined = 0;
  let deleting = 0;
  fc.assert(
    fc.property(fc.array(edit, { maxLength: 10 }), fc.array(edit, { minLength: 2, maxLength: 10 }), (before, turn) => {
      const writer = new Y.Doc();
      const base = updatesOf(writer, before);
      const updates = updatesOf(writer, turn);
      if (updates.length < 2) return true;
      // One client's local updates always follow each other's clocks: they always join.
      const concatenated = concatUpdates(updates);
      if (concatenated === undefined) return false;
      // The delete set is written as Yjs's merge writes it.
      if (!Y.equalDeleteSets(Y.decodeUpdate(concatenated).ds, Y.decodeUpdate(Y.mergeUpdates(updates)).ds)) return false;
      if (Y.decodeUpdate(concatenated).ds.clients.size > 0) deleting++;
      joined++;
      const [receiver, reference] = [new Y.Doc(), new Y.Doc()];
      for (const doc of [receiver, reference]) for (const update of base) Y.applyUpdate(doc, update);
      Y.applyUpdate(receiver, concatenated);
      Y.applyUpdate(reference, Y.mergeUpdates(updates));
      // Against the writer, its clocks only: a writer that formats inside a surrogate pair keeps the split halves in its
      // own text, while every receiver (through Yjs's merge too) gets the pair whole.
      const vector = (doc: Y.Doc): string => JSON.stringify([...Y.decodeStateVector(Y.encodeStateVector(doc))]);
      return state(receiver) === state(reference) && vector(receiver) === vector(writer);
    }),
    { numRuns: 300 },
  );
  t.ok(joined > 100 && deleting > 50, `joined in ${joined} of 300 turns (${deleting} with deletes), each matching Yjs's merge, and the writer's clocks`);
  t.end();
});

t.test('bytes that cannot simply be joined are left to Y.mergeUpdates', (t) => {
  const a = new Y.Doc();
  const b = new Y.Doc();
  const [a1, a2, a3] = updatesOf(a, [(doc) => doc.getText('text').insert(0, 'abc'), (doc) => doc.getText('text').insert(3, 'd'), (doc) => doc.getText('text').insert(4, 'e')]) as [Uint8Array, Uint8Array, Uint8Array];
  const [b1] = updatesOf(b, [(doc) => doc.getText('text').insert(0, 'x')]) as [Uint8Array];
  t.equal(concatUpdates([a1]), undefined, 'one update: nothing to join');
  t.equal(concatUpdates([a1, b1]), undefined, 'two clients');
  t.equal(concatUpdates([a1, a3]), undefined, 'a gap between the clocks');
  t.equal(concatUpdates([a2, a1]), undefined, 'out of order');
  t.equal(concatUpdates([a1, new Uint8Array([1, 2, 3])]), undefined, 'bytes that do not decode');
  t.equal(concatUpdates([a1, Y.mergeUpdates([a2, b1])]), undefined, 'an update of two clients');
  const [d1, d2, d3] = updatesOf(a, [(doc) => doc.getText('text').delete(0, 1), (doc) => doc.getText('text').delete(2, 1), (doc) => doc.getText('text').delete(0, 1)]) as [Uint8Array, Uint8Array, Uint8Array];
  const joined = concatUpdates([a1, a2, a3, d1, d2, d3]);
  t.ok(joined !== undefined, 'inserts and three deletes join');
  t.same(
    [...(Y.decodeUpdate(joined as Uint8Array).ds.clients.get(a.clientID) ?? [])].map((item) => [item.clock, item.len]),
    [[0, 2], [3, 1]],
    'the deletes of clocks 0, 1 and 3 as two ranges, adjacent ones joined',
  );
  const receiver = new Y.Doc();
  Y.applyUpdate(receiver, joined as Uint8Array);
  t.equal(receiver.getText('text').toString(), 'ce');
  t.equal(concatUpdates([d1, d2]) === undefined, false, 'deletes alone join too');
  t.end();
});

t.test('arbitrary bytes beside a valid update never throw, and whatever joins decodes as one update', (t) => {
  const a = new Y.Doc();
  const [valid] = updatesOf(a, [(doc) => doc.getText('text').insert(0, 'abc')]) as [Uint8Array];
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), fc.boolean(), (bytes, before) => {
      const updates = before ? [bytes, valid] : [valid, bytes];
      const joined = concatUpdates(updates);
      // Whatever joins must decode as one update holding both.
      if (joined !== undefined) Y.decodeUpdate(joined);
      return true;
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 random byte strings beside a valid update');
  t.end();
});

t.test("a log tail's runs joined by their bytes bring a store where its entries one by one do", (t) => {
  let shorter = 0;
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), edit), { minLength: 1, maxLength: 30 }), fc.array(fc.integer({ min: 0, max: 30 }), { maxLength: 2 }), (steps, broken) => {
      // Three editors of one document, each hearing the others at once: the log holds their updates as the server took
      // them in, runs of one editor's consecutive transactions between the others'.
      const writers = [new Y.Doc(), new Y.Doc(), new Y.Doc()];
      const log: Uint8Array[] = [];
      for (const [who, change] of steps) {
        const writer = writers[who] as Y.Doc;
        for (const update of updatesOf(writer, [change])) {
          log.push(update);
          for (const other of writers) if (other !== writer) Y.applyUpdate(other, update);
        }
      }
      // An entry of two clients (a reconnecting client's SyncStep2 is logged so) and an empty one, in the middle.
      for (const at of broken) log.splice(Math.min(at, log.length), 0, at % 2 === 0 ? Y.mergeUpdates(log.slice(0, at)) : new Uint8Array([0, 0]));
      const runs = concatRuns(log);
      if (runs.length < log.length) shorter++;
      const [entries, joined] = [new Y.Doc(), new Y.Doc()];
      entries.transact(() => {
        for (const update of log) Y.applyUpdate(entries, update);
      });
      joined.transact(() => {
        for (const update of runs) Y.applyUpdate(joined, update);
      });
      return runs.length <= log.length && state(joined) === state(entries);
    }),
    { numRuns: 300 },
  );
  t.ok(shorter > 100, `${shorter} of 300 tails came out in fewer updates, each bringing the same state as its entries`);
  t.end();
});

t.test("a log tail's runs: each editor's consecutive updates become one, the rest stay in their place", (t) => {
  const a = new Y.Doc();
  const b = new Y.Doc();
  const [a1, a2] = updatesOf(a, [(doc) => doc.getText('text').insert(0, 'ab'), (doc) => doc.getText('text').insert(2, 'c')]) as [Uint8Array, Uint8Array];
  const [b1, b2] = updatesOf(b, [(doc) => doc.getText('text').insert(0, 'x'), (doc) => doc.getText('text').insert(1, 'y')]) as [Uint8Array, Uint8Array];
  const [a3] = updatesOf(a, [(doc) => doc.getText('text').insert(0, 'd')]) as [Uint8Array];
  const both = Y.mergeUpdates([a1, b1]);
  t.same(concatRuns([]), [], 'no entries, no runs');
  t.same(concatRuns([a1]), [a1], 'one entry as it is');
  const runs = concatRuns([a1, a2, b1, b2, a3]);
  t.equal(runs.length, 3, 'a, b, a again: three runs');
  t.same(runs[0], concatUpdates([a1, a2]));
  t.same(runs[1], concatUpdates([b1, b2]));
  t.equal(runs[2], a3, 'a run of one is the entry itself');
  const around = concatRuns([a1, both, a2, new Uint8Array([1, 2, 3]), a3]);
  t.equal(around.length, 5, 'an entry of two clients and bytes that do not decode stay alone, and part the runs around them');
  t.equal(around[1], both);
  t.end();
});

t.test('a state and a run joined by their bytes bring a receiver where the state, then the run, do', (t) => {
  let joined = 0;
  let ownPart = 0;
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), edit), { maxLength: 12 }), fc.integer({ min: 0, max: 2 }), fc.array(edit, { minLength: 1, maxLength: 8 }), (before, who, after) => {
      // A snapshot of three editors' work, then one editor's run of updates (the tail a store is loaded with).
      const writers = [new Y.Doc(), new Y.Doc(), new Y.Doc()];
      for (const [index, change] of before) {
        for (const update of updatesOf(writers[index] as Y.Doc, [change])) for (const other of writers) Y.applyUpdate(other, update);
      }
      const writer = writers[who] as Y.Doc;
      const snapshot = Y.encodeStateAsUpdate(writer);
      const runs = concatRuns(updatesOf(writer, after));
      // An edit that changes nothing (formatting no text) makes no update: no tail.
      if (runs.length === 0) return true;
      if (runs.length !== 1) return false;
      const [run] = runs as [Uint8Array];
      const both = appendRun(snapshot, run);
      if (both === undefined) return false;
      joined++;
      if (Y.decodeStateVector(Y.encodeStateVectorFromUpdate(snapshot)).has(writer.clientID)) ownPart++;
      const [receiver, reference] = [new Y.Doc(), new Y.Doc()];
      Y.applyUpdate(receiver, both);
      Y.applyUpdate(reference, snapshot);
      Y.applyUpdate(reference, run);
      return state(receiver) === state(reference);
    }),
    { numRuns: 300 },
  );
  t.ok(joined > 250 && ownPart > 50, `${joined} of 300 joined, all that had a tail (${ownPart} into the editor's own part of the state), each as the two applied in turn`);
  t.end();
});

t.test('a state and a run that do not follow each other are left to Yjs', (t) => {
  const a = new Y.Doc();
  const [a1, a2, a3] = updatesOf(a, [(doc) => doc.getText('text').insert(0, 'abc'), (doc) => doc.getText('text').insert(3, 'd'), (doc) => doc.getText('text').insert(4, 'e')]) as [Uint8Array, Uint8Array, Uint8Array];
  t.equal(appendRun(a1, a3), undefined, "a gap after the state's part of that client");
  t.equal(appendRun(new Uint8Array([1, 2, 3]), a2), undefined, 'a state that does not decode');
  t.equal(appendRun(a1, Y.mergeUpdates([a2, a3, Y.encodeStateAsUpdate(new Y.Doc())]).subarray(0, 3)), undefined, 'a run that does not decode');
  const joined = appendRun(a1, a2);
  const receiver = new Y.Doc();
  Y.applyUpdate(receiver, joined as Uint8Array);
  t.equal(receiver.getText('text').toString(), 'abcd');
  t.end();
});
