// Tests the update-log row format: one update as it is, several as a batch that reads back in order, and a batch Yjs would take for the empty update.
import t from 'tap';
import * as Y from 'yjs';
import { decodeLogRow, encodeLogRow, LogRowBuilder } from '../../src/store/log-rows.js';

function someUpdates(count: number): Uint8Array[] {
  const doc = new Y.Doc();
  const updates: Uint8Array[] = [];
  doc.on('update', (update: Uint8Array) => updates.push(update));
  for (let i = 0; i < count; i++) doc.getText('content').insert(0, `#${i}`);
  return updates;
}

t.test('one update is its own row; several are a batch that reads back in order', async (t) => {
  const [one] = someUpdates(1);
  t.equal(encodeLogRow([one as Uint8Array]), one, 'one update: the row is the update');
  t.same(decodeLogRow(one as Uint8Array), [one]);
  const many = someUpdates(200);
  const row = encodeLogRow(many);
  t.same(decodeLogRow(row).map((update) => [...update]), many.map((update) => [...update]), 'every update, in order');
  t.same(decodeLogRow(new Uint8Array([0, 0])), [new Uint8Array([0, 0])], 'the empty update is an update, not a batch');
});

t.test('a batch given to Yjs as an update changes nothing (it begins with the empty update)', async (t) => {
  const doc = new Y.Doc();
  doc.getText('content').insert(0, 'kept');
  const before = Y.encodeStateVector(doc);
  Y.applyUpdate(doc, encodeLogRow(someUpdates(3)));
  t.same(Y.encodeStateVector(doc), before);
  t.equal(doc.getText('content').toString(), 'kept');
});

t.test('a damaged batch fails loudly, saying what is wrong', async (t) => {
  const row = encodeLogRow(someUpdates(3));
  t.throws(() => decodeLogRow(row.subarray(0, row.length - 2)), /runs past the row's end|Unexpected end of array/);
  t.throws(() => decodeLogRow(new Uint8Array([...row, 7])), /1 bytes after the batch's 3 updates/);
  t.throws(() => decodeLogRow(new Uint8Array([0, 0, 9, 0])), /batch version 9 is not readable/);
});

t.test('a lone update that would read as a batch is stored as a batch of one, and reads back as itself', async (t) => {
  const odd = new Uint8Array([0, 0, 1, 1, 2, 9, 9]);
  const row = encodeLogRow([odd]);
  t.not(row, odd, 'wrapped, not stored as it is');
  t.same(decodeLogRow(row), [odd]);
});

t.test('a row builder makes encodeLogRow\'s bytes as the updates come, commit after commit', async (t) => {
  const builder = new LogRowBuilder();
  const lone = new Uint8Array([0, 0, 1, 1, 7]);
  const big = new Uint8Array(3000).fill(5);
  for (const updates of [someUpdates(1), someUpdates(200), [lone], [lone, ...someUpdates(2)], [big, big, ...someUpdates(1)], someUpdates(3)]) {
    for (const update of updates) builder.add(update);
    t.equal(builder.count, updates.length);
    const row = builder.take();
    t.same([...row], [...encodeLogRow(updates)], `${updates.length} update(s)`);
    t.equal(builder.count, 0, 'emptied');
    t.same(decodeLogRow(row).map((update) => [...update]), updates.map((update) => [...update]));
  }
  const one = someUpdates(1)[0] as Uint8Array;
  builder.add(one);
  t.equal(builder.take(), one, 'a lone update is its own row, not a copy (as encodeLogRow)');
  const two = someUpdates(2);
  for (const update of two) builder.add(update);
  const row = builder.take();
  const copy = [...row];
  for (const update of someUpdates(5)) builder.add(update);
  builder.take();
  t.same([...row], copy, 'a batch row is a buffer of its own: later appends do not change it');
});
