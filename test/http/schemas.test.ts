// Request schemas are compiled at an operation's first request, ajv loaded at the first request (src/http/validate.ts): every schema still compiles, and the lazy paths validate.
import t from 'tap';
import { checkSchema, compileValidator, validatorLoading } from '../../src/http/validate.js';
import { startTestServer } from '../helpers/server.js';

t.test('every operation schema compiles with the request validator (strict mode, Plait keywords and formats)', async (t) => {
  const { server } = await startTestServer(t);
  t.ok(server.operations.length > 50, `${server.operations.length} operations registered`);
  for (const op of server.operations) {
    await t.resolves(checkSchema(op.schema), `${op.paths[0] ?? '?'}: its schema compiles`);
  }
});

t.test('a validator compiles its schema at the first call, not when it is made', async (t) => {
  await validatorLoading();
  t.equal(validatorLoading(), undefined, 'once loaded, nothing to wait for');
  // strict mode rejects an unknown keyword when the schema is compiled: making the validator must not throw.
  const broken = compileValidator<unknown>({ type: 'object', notAKeyword: 1 });
  t.throws(() => broken({}), /unknown keyword: "notAKeyword"/, 'the compile error surfaces at the first call');

  const validate = compileValidator<{ name: string }>({ type: 'object', properties: { name: { type: 'string', maxBytes: 4 } }, required: ['name'], additionalProperties: false });
  t.same(validate({ name: 'abc' }), { name: 'abc' }, 'first call compiles and accepts');
  t.throws(() => validate({ name: 'abcdé' }), { status: 'INVALID_ARGUMENT', message: 'data.name must be at most 4 bytes in UTF-8' });
  t.throws(() => validate({}), { message: 'data.name is required' }, 'later calls reuse the compiled schema');
});
