// Tests the answer cache's order and bounds: a hit makes an answer recent, a key at its share loses its own oldest, the whole cache its least recent.
import t from 'tap';
import { AnswerCache } from '../../src/tenant/answer-cache.js';

t.test('a key at its share loses its own oldest answer; past the whole bound the least recently used goes', async (t) => {
  const cache = new AnswerCache<string>(5, 3);
  for (const id of ['a1', 'a2', 'a3']) cache.set('a', id, id, 100);
  t.equal(cache.get('a1', 0)?.value, 'a1', 'a hit makes a1 the most recent');
  cache.set('a', 'a4', 'a4', 100);
  t.same([cache.sizeOf('a'), cache.get('a2', 0)], [3, undefined], 'a at its share lost a2, its least recently used, not a1');
  for (const id of ['b1', 'b2']) cache.set('b', id, id, 100);
  t.equal(cache.size, 5);
  cache.set('c', 'c1', 'c1', 100);
  t.equal(cache.size, 5, 'the whole bound holds');
  t.equal(cache.get('a3', 0), undefined, 'the least recently used answer of any key went');
  t.equal(cache.get('b1', 0)?.value, 'b1');
  t.equal(cache.get('x', 0), undefined, 'an unknown answer is absent');
});

t.test('a lapsed answer is absent and dropped; forget drops one key', async (t) => {
  const cache = new AnswerCache<string>(10, 10);
  cache.set('a', 'a1', 'a1', 50);
  cache.set('b', 'b1', 'b1', 500);
  t.equal(cache.get('a1', 50), undefined, 'lapsed at its until');
  t.equal(cache.sizeOf('a'), 0, 'and dropped');
  cache.set('a', 'a2', 'a2', 500);
  cache.set('a', 'a2', 'a2 again', 600);
  t.same([cache.sizeOf('a'), cache.get('a2', 0)?.value], [1, 'a2 again'], 'setting an answer again replaces it');
  cache.forget('a');
  t.same([cache.size, cache.sizeOf('a'), cache.get('b1', 0)?.value], [1, 0, 'b1'], "forget drops only that key's answers");
  cache.clear();
  t.equal(cache.size, 0);
});
