// Fuzz and property suite (issue 10): hostile REST bodies never get a 500 or hurt another tenant; hostile frames never throw.
import fc from 'fast-check';
import t from 'tap';
import * as Y from 'yjs';
import { readClientMessage, writeAwareness, writeSyncStep1, writeSyncStep2, writeUpdate } from '../../src/sync/protocol.js';
import { apiKeyHeaders } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';

/** Runs per property in `npm test`; FUZZ_RUNS raises it (bench/fuzz.sh runs it larger). */
const RUNS = Number(process.env['FUZZ_RUNS'] ?? 40);

const DANGEROUS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

/** JSON text spliced in as is: values too deep for JSON.stringify (which recurses) to write. */
class Raw {
  constructor(readonly text: string) {}

  /** How fast-check prints a counterexample: the text itself could be 240 KB. */
  [fc.toStringMethod](): string {
    return `Raw(${this.text.slice(0, 12)}… ${this.text.length} chars)`;
  }
}

/** Values a careless or hostile client sends where something else is expected. */
const nasty: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: 60, max: 120_000 }).map((depth) => new Raw(`${'['.repeat(depth)}${']'.repeat(depth)}`)),
  fc.integer({ min: 60, max: 3000 }).map((depth) => `${'<d>'.repeat(depth)}x${'</d>'.repeat(depth)}`),
  fc.constantFrom(...DANGEROUS),
  fc.constantFrom('中'.repeat(256), 'x'.repeat(257), '', '\u0000', '\u001e', '\ud800', 'a/b', '%zz'),
  // 64+ characters holding a byte of LMDB's key encoding (U+0000-U+0004), which ordered-binary escapes only in shorter strings.
  fc.constantFrom(`${'q'.repeat(70)}\u0001`, `\u0000${'q'.repeat(63)}`, '\u0004'.repeat(256)),
  fc.constantFrom(2 ** 64, -1, 1e308, -0, 0.5, Number.MAX_SAFE_INTEGER + 2, 8.64e15 + 1),
  fc.constantFrom(null, true, [], {}),
  fc.integer({ min: 60, max: 2000 }).map((depth) => new Raw(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`)),
  fc.constantFrom(...DANGEROUS).map((key) => JSON.parse(`{"${key}": {"${key}": 1}}`) as unknown),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.jsonValue({ maxDepth: 4 }),
);

/** One valid body per operation; the fuzzer replaces one field (or one nested field) with a nasty value. */
const OPERATIONS: Array<[string, Record<string, unknown>]> = [
  ['/v2/crdt/add', { organizationId: 'o', documentId: 'd', editorId: 'e', type: 'map', data: { k: 'v' } }],
  ['/v2/crdt/update', { organizationId: 'o', documentId: 'd', editorId: 'e', type: 'xml', data: '<p>x</p>' }],
  ['/v2/crdt/get', { organizationId: 'o', documentId: 'd', editorId: 'e' }],
  ['/v2/commentannotations/add', { organizationId: 'o', documentId: 'd', commentAnnotations: [{ annotationId: 'a', context: { x: 1 }, commentData: [{ commentText: 't', from: { userId: 'u' }, createdAt: 1 }] }] }],
  ['/v2/commentannotations/get', { organizationId: 'o', documentIds: ['d'], groupByDocumentId: true }],
  ['/v2/commentannotations/count/get', { organizationId: 'o', documentIds: ['d'], userId: 'u' }],
  ['/v2/commentannotations/delete', { organizationId: 'o', documentId: 'd', annotationIds: ['a'] }],
  ['/v2/presence/add', { organizationId: 'o', documentId: 'd', users: [{ userId: 'u', status: 'online' }] }],
  ['/v2/organizations/add', { organizations: [{ organizationId: 'o', organizationName: 'n', plan: 'x' }] }],
  ['/v2/users/add', { organizationId: 'o', users: [{ userId: 'u', name: 'n', meta: { a: 1 } }], createOrganization: true }],
  ['/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'd' }], createOrganization: true }],
  // After the adds, so a hostile id they accepted is deleted again (a long id with U+0001 was accepted, then its deletes threw).
  ['/v2/users/delete', { organizationId: 'o', userIds: ['u'] }],
  ['/v2/organizations/documents/delete', { organizationId: 'o', documentIds: ['d'] }],
  ['/v2/auth/permissions/add', { user: { userId: 'u' }, permissions: { resources: [{ type: 'document', id: 'd', organizationId: 'o', expiresAt: 1 }] } }],
  ['/v2/auth/generate_token', { userId: 'u', userProperties: { name: 'n', email: 'e@example.com' }, permissions: { resources: [] } }],
];

/** Paths to every field of `value`, nested ones included ([] is the body itself). */
function fieldPaths(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  if (typeof value !== 'object' || value === null) return [prefix];
  const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return [prefix, ...entries.flatMap(([key, child]) => fieldPaths(child, [...prefix, key]))];
}

/** A copy of `body` with the field at `path` replaced (own properties only, so `__proto__` stays a key). */
function replaced(body: unknown, path: ReadonlyArray<string | number>, value: unknown): unknown {
  if (path.length === 0) return value;
  // An earlier change of the same case replaced a parent with something that has no fields: nothing to reach.
  if (typeof body !== 'object' || body === null || body instanceof Raw) return body;
  const [head, ...rest] = path as [string | number, ...Array<string | number>];
  if (Array.isArray(body)) return body.map((item, i) => (i === head ? replaced(item, rest, value) : item));
  const copy: Record<string, unknown> = Object.fromEntries(Object.entries(body as Record<string, unknown>));
  Object.defineProperty(copy, head, { value: replaced(copy[head], rest, value), enumerable: true, writable: true, configurable: true });
  return copy;
}

t.test('hostile REST bodies: never a 500, always the error envelope, and another tenant is unaffected', async (t) => {
  const { api } = await startTestServer(t);
  const victim = await api.createWorkspace();
  const attacker = await api.createWorkspace();
  const store = { organizationId: 'o', documentId: 'd', editorId: 'e' };
  t.equal((await api.call(victim, '/v2/crdt/add', { ...store, type: 'text', data: 'victim' })).status, 200);
  let served = 0;
  // Each operation gets its own runs, so a rare shape in one of them is not drowned by the others.
  for (const [path, valid] of OPERATIONS) {
    const cases = fc
      .array(fc.record({ at: fc.constantFrom(...fieldPaths(valid)), value: nasty }), { minLength: 1, maxLength: 3 })
      .map((changes) => changes.reduce<unknown>((current, { at, value }) => replaced(current, at, value), valid));
    await fc.assert(
      fc.asyncProperty(cases, async (body) => {
        const text = serialize(body);
        const response = await api.send(path, `{"data":${text}}`, apiKeyHeaders(attacker));
        served++;
        if (response.status >= 500) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(response.body)} for ${text.slice(0, 300)}`);
        if (response.status !== 200 && response.body.error?.status === undefined) throw new Error(`${path} answered ${response.status} without the error envelope`);
      }),
      { numRuns: RUNS, seed: Number(process.env['FUZZ_SEED'] ?? 1010) },
    );
  }
  t.equal(served, RUNS * OPERATIONS.length, `${served} hostile bodies served`);
  const read = await api.call<Array<{ data: unknown }>>(victim, '/v2/crdt/get', store);
  t.equal(read.body.result?.data[0]?.data, 'victim', 'the other tenant reads its data');
  t.equal((await api.call(victim, '/v2/crdt/update', { ...store, type: 'text', data: 'victim again' })).status, 200, 'and writes');
});

/** Ids a client may send: any text, the names objects carry, and long ones holding control characters. */
const hostileId: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 256 }),
  fc.constantFrom(...DANGEROUS, '中'.repeat(170), '\ud800', 'a/b', '%zz', ' ', '..'),
  // Runs of control characters: ordered-binary escapes U+0000-U+0004 only in strings under 64 characters (longer, they were written raw).
  fc.tuple(fc.string({ maxLength: 100 }), fc.integer({ min: 0, max: 0x1f }), fc.integer({ min: 1, max: 150 })).map(([text, code, count]) => `${text}${String.fromCharCode(code).repeat(count)}`),
);

t.test('a hostile id is refused at the door, or what it was written under can be read and deleted again: never a 500', async (t) => {
  const { api } = await startTestServer(t);
  const tenant = await api.createWorkspace();
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(hostileId, async (id) => {
      const steps: Array<[string, Record<string, unknown>]> = [
        ['/v2/organizations/documents/add', { organizationId: id, documents: [{ documentId: id }], createOrganization: true }],
        ['/v2/users/add', { organizationId: id, documentId: id, users: [{ userId: id }] }],
        ['/v2/commentannotations/add', { organizationId: id, documentId: id, commentAnnotations: [{ annotationId: id, commentData: [{ commentText: 'x', from: { userId: id } }] }] }],
        ['/v2/commentannotations/get', { organizationId: id, documentIds: [id] }],
        ['/v2/users/delete', { organizationId: id, documentId: id, userIds: [id] }],
        ['/v2/organizations/documents/delete', { organizationId: id, documentIds: [id] }],
        ['/v2/commentannotations/get', { organizationId: id, documentIds: [id] }],
        ['/v2/organizations/delete', { organizationIds: [id] }],
      ];
      for (const [index, [path, data]] of steps.entries()) {
        const response = await api.call(tenant, path, data);
        if (response.status >= 500) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(response.body)} for id ${JSON.stringify(id)}`);
        // Only the first write may refuse the id; once it is stored, every later step must take it.
        if (index === 0 && response.status === 400 && response.body.error?.status === 'INVALID_ARGUMENT') return;
        if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(response.body)} for the accepted id ${JSON.stringify(id)}`);
        // Read before the delete (index 3) the thread is there; read after it (index 6) it is gone with its document.
        if (index === 3 || index === 6) {
          const threads = (response.body.result?.data as unknown[] | undefined)?.length;
          if (threads !== (index === 3 ? 1 : 0)) throw new Error(`${path} found ${String(threads)} thread(s) ${index === 3 ? 'before' : 'after'} the document's delete for id ${JSON.stringify(id)}`);
        }
      }
      accepted++;
    }),
    { numRuns: RUNS, seed: Number(process.env['FUZZ_SEED'] ?? 1010) },
  );
  t.ok(accepted > 0, `${accepted} of ${RUNS} hostile ids were accepted and went through their whole life`);
});

/** JSON text of `value`, with Raw values spliced in (the rest is shallow enough for JSON.stringify). */
function serialize(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(serialize).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value).map(([key, child]) => `${JSON.stringify(key)}:${serialize(child)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

t.test('the sync codec: arbitrary bytes and mutated real frames are read, never thrown; real frames read back', (t) => {
  const doc = new Y.Doc();
  doc.getText('content').insert(0, 'fuzz');
  const update = Y.encodeStateAsUpdate(doc);
  const real = [writeUpdate(update), writeSyncStep1(Y.encodeStateVector(doc)), writeSyncStep2(update), writeAwareness(new Uint8Array([1, 5, 1, 2, 123, 125]))];
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      readClientMessage(bytes);
    }),
    { numRuns: RUNS * 20 },
  );
  fc.assert(
    fc.property(fc.constantFrom(...real), fc.nat(), fc.integer({ min: 0, max: 255 }), (frame, at, byte) => {
      const mutated = frame.slice();
      mutated[at % mutated.length] = byte;
      const read = readClientMessage(mutated);
      // Whatever it reads as, an update it accepts must apply to a fresh doc without throwing.
      if (read.kind === 'update' || read.kind === 'sync-step2') Y.applyUpdate(new Y.Doc(), read.update);
    }),
    { numRuns: RUNS * 20 },
  );
  t.same(real.map((frame) => readClientMessage(frame).kind), ['update', 'sync-step1', 'sync-step2', 'awareness']);
  t.end();
});
