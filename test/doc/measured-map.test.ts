import t from 'tap';
import { jsonLength, MeasuredMap } from '../../src/doc/measured-map.js';

t.test('jsonLength: about the length of the value as JSON, nested objects and arrays included', (t) => {
  const values: unknown[] = [
    'text',
    { a: 1, b: 'two', c: [true, null, { d: 'e' }], skipped: undefined },
    { commentText: 'x'.repeat(5000), from: { userId: 'u1', name: 'User One' }, attachments: [{ url: 'https://example.com/a.png', size: 1234 }] },
    { context: { nested: { deeper: Array.from({ length: 100 }, (_, i) => ({ key: `k${i}`, value: i })) } } },
  ];
  for (const value of values) {
    const exact = JSON.stringify(value).length;
    const approx = jsonLength(value);
    t.ok(approx >= exact * 0.8 && approx <= exact * 1.3, `${approx} against ${exact} as JSON`);
  }
  t.equal(jsonLength({ keep: 'a', comments: ['x'.repeat(1000)] }, 'comments'), jsonLength({ keep: 'a' }), 'the skipped field is not counted');
  t.end();
});

t.test('MeasuredMap: bytes follow set, replace, delete and clear', (t) => {
  const map = new MeasuredMap<string, string>((value) => value.length);
  map.set('a', 'xxx').set('b', 'yyyyy');
  t.equal(map.bytes, 8);
  map.set('a', 'x');
  t.equal(map.bytes, 6, 'a replaced value leaves, the new one counts');
  t.ok(map.delete('b'));
  t.notOk(map.delete('b'));
  t.equal(map.bytes, 1);
  map.clear();
  t.equal(map.bytes, 0);
  t.end();
});
