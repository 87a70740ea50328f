import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import t from 'tap';
import { ERROR_ANSWERS } from '../../src/http/openapi.js';
import { operationRows } from '../helpers/readme.js';
import { startTestServer } from '../helpers/server.js';

interface PostOperation {
  operationId: string;
  security: Array<Record<string, string[]>>;
  requestBody: { content: { 'application/json': { schema: { required: string[]; properties: { data: object } } } } };
  responses: Record<string, { $ref?: string; content?: unknown }>;
}
interface Document {
  openapi: string;
  paths: Record<string, { post?: PostOperation }>;
  components: { responses: Record<string, { content: { 'application/json': { schema: { $ref: string } } } }>; schemas: Record<string, object> };
}

t.test('GET /openapi.json is a valid OpenAPI 3.1 document that covers every operation the README marks done', async (t) => {
  const { url, server } = await startTestServer(t);
  const response = await fetch(`${url}/openapi.json`);
  t.equal(response.status, 200);
  t.match(response.headers.get('content-type') ?? '', /^application\/json/);
  const doc = (await response.json()) as Document;
  t.equal(doc.openapi, '3.1.0');

  const validator = new Validator();
  const result = await validator.validate(doc as unknown as Record<string, unknown>);
  t.ok(result.valid, `valid OpenAPI: ${JSON.stringify(result.errors ?? null).slice(0, 2000)}`);
  t.equal(validator.version, '3.1');

  // Every request schema is also a schema a JSON Schema 2020-12 validator (OpenAPI 3.1's dialect) compiles strictly.
  const ajv2020 = new Ajv2020({ strict: true, allowUnionTypes: true, validateFormats: false });
  // Plait's two keywords (src/http/validate.ts, docs/limits.md): sizes in UTF-8 bytes, which JSON Schema cannot say.
  ajv2020.addKeyword({ keyword: 'maxBytes', type: 'string', schemaType: 'number' });
  ajv2020.addKeyword({ keyword: 'maxJsonBytes', schemaType: 'number' });

  const byPath = new Map(server.operations.flatMap((op) => op.paths.map((path) => [path, op] as const)));
  const done = operationRows().filter((row) => row.status === 'done');
  t.ok(done.length > 40, 'the README lists the served operations');
  const ids = new Set<string>();
  for (const row of done) {
    for (const path of row.paths) {
      const post = doc.paths[path]?.post;
      if (post === undefined) {
        t.fail(`${path} is in the README table but not in /openapi.json`);
        continue;
      }
      t.notOk(ids.has(post.operationId), `${path}: operationId ${post.operationId} is unique`);
      ids.add(post.operationId);
      const body = post.requestBody.content['application/json'].schema;
      t.same(body.required, ['data'], `${path}: the body is the {data} envelope`);
      t.same(body.properties.data, byPath.get(path)?.schema, `${path}: data is the schema the server validates with`);
      t.doesNotThrow(() => ajv2020.compile(body), `${path}: the request schema compiles as JSON Schema 2020-12`);
      for (const code of Object.keys(ERROR_ANSWERS)) {
        t.equal(post.responses[code]?.$ref, `#/components/responses/Error${code}`, `${path}: answers ${code} with the error envelope`);
      }
      t.ok(post.responses['200'] !== undefined, `${path}: documents its success answer`);
      // `body creds` operations carry their credentials in `data`, so no header scheme applies.
      const auth = row.auth === 'public' || row.auth === 'body creds' ? [] : row.auth === 'workspace' ? [{ workspaceId: [], workspaceAuthToken: [] }] : [{ apiKey: [], authToken: [] }];
      t.same(post.security, auth, `${path}: security matches the README's auth column (${row.auth})`);
    }
  }
  for (const code of Object.keys(ERROR_ANSWERS)) {
    t.equal(doc.components.responses[`Error${code}`]?.content['application/json'].schema.$ref, '#/components/schemas/ErrorEnvelope');
  }
  t.equal(Object.keys(doc.paths).length, server.paths.length, 'exactly the served paths, no more');
});

t.test('GET /docs serves the reference page and its assets from the installed package, not a CDN', async (t) => {
  const { url } = await startTestServer(t);
  const page = await fetch(`${url}/docs`);
  t.equal(page.status, 200);
  const html = await page.text();
  t.match(html, /\/openapi\.json/);
  const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
  t.ok(sources.length >= 3);
  for (const source of sources) {
    t.match(source, /^\/docs\//, `${source} is served locally`);
    const asset = await fetch(`${url}${source}`);
    t.equal(asset.status, 200, `${source} answers 200`);
    t.ok((await asset.arrayBuffer()).byteLength > 100, `${source} has content`);
  }
});
