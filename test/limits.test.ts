import t from 'tap';
import { tooDeep } from '../src/limits.js';

t.test('tooDeep: undefined up to the limit, the first too-deep place past it', (t) => {
  // depth counts containers: {a: {b: 1}} holds two levels.
  t.equal(tooDeep({ a: { b: 1 } }, 2), undefined);
  t.equal(tooDeep({ a: { b: {} } }, 2), 'data.a.b');
  t.equal(tooDeep({ a: [1, [2]] }, 2), 'data.a[1]');
  t.equal(tooDeep([[]], 1, 'x'), 'x[0]');
  t.equal(tooDeep('text', 0), undefined);
  t.equal(tooDeep(null, 0), undefined);
  t.end();
});

t.test('tooDeep names the place the walk meets first, whatever the width', (t) => {
  const wide: Record<string, unknown> = {};
  for (let i = 0; i < 1000; i++) wide[`k${i}`] = { ok: [i] };
  t.equal(tooDeep(wide, 3), undefined);
  // The walk is depth-first from the last key (a stack), so of two deep places it names the later one.
  wide['k10'] = { deep: [[1]] };
  wide['k900'] = { deeper: [[[1]]] };
  t.equal(tooDeep(wide, 3), 'data.k900.deeper[0]');
  t.end();
});

t.test('tooDeep: a "__proto__" key parsed from JSON is walked like any other', (t) => {
  const parsed = JSON.parse('{"__proto__": {"x": {"y": {}}}}') as unknown;
  t.equal(tooDeep(parsed, 3), 'data.__proto__.x.y');
  t.end();
});
