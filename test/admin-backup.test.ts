// Tests `admin backup`: a copy of a data directory taken while the server writes holds every answered write and starts as a server.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { Store } from '../src/store/env.js';
import { DB } from '../src/store/keys.js';
import { CLUSTER_CACHE_KEY } from '../src/store/replication.js';
import type { Credentials } from './helpers/api.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const ADMIN = fileURLToPath(new URL('../src/admin.ts', import.meta.url));

function admin(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import=tsx', ADMIN, ...args], { env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : Number((error as { code?: number }).code ?? 1), stdout, stderr }),
    );
  });
}

const scope = { organizationId: 'org-b', documentId: 'doc-b' };

async function addThread(server: TestServer, creds: Credentials, id: string): Promise<void> {
  const res = await server.api.call(creds, '/v2/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: id, commentData: [{ commentText: id, from: { userId: 'u1' } }] }] });
  if (res.status !== 200) throw new Error(`add ${id}: ${JSON.stringify(res.body)}`);
}

async function threadIds(server: TestServer, creds: Credentials): Promise<Set<string>> {
  const res = await server.api.call<Array<{ annotationId: string }>>(creds, '/v2/commentannotations/get', { ...scope, pageSize: 1000 });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return new Set((res.body.result?.data ?? []).map((thread) => thread.annotationId));
}

t.test('a backup taken while the server writes holds every write answered before it, and starts as a server', async (t) => {
  // One fixture folder per test: a second t.testdir() call would empty it under the running server.
  const base = t.testdir();
  const dataDir = join(base, 'data');
  const live = await startTestServer(t, {}, dataDir);
  const creds = await live.api.createWorkspace();
  const crdt = { ...scope, editorId: 'e1', type: 'text' };
  t.equal((await live.api.call(creds, '/v2/crdt/add', { ...crdt, data: 'hello from before the backup' })).status, 200);
  for (let i = 0; i < 40; i++) await addThread(live, creds, `before-${i}`);

  // Writes go on during the backup, one after another: those answered before it began must all be in the copy.
  let writing = true;
  let written = 0;
  const writer = (async () => {
    while (writing) await addThread(live, creds, `during-${written++}`);
  })();
  const answeredBefore = written;
  const target = join(base, 'backup');
  const result = await admin(['backup', '--to', target, '--data-dir', dataDir, '--json']);
  writing = false;
  await writer;
  t.equal(result.code, 0, result.stderr);
  const report = JSON.parse(result.stdout) as { bytes: number; schemaVersion: number; key: string; clusterCache: boolean };
  t.match(report, { key: 'copied', clusterCache: false, schemaVersion: Number });
  t.ok(report.bytes > 0, 'reports the size of the copy');
  t.equal(statSync(join(target, 'server.key')).mode & 0o777, 0o600, 'the server key is copied, private');
  t.notOk(existsSync(join(target, 'db', 'lock.mdb')), 'no lock file: LMDB makes one when the copy is opened');
  t.ok(written > answeredBefore, 'the server kept answering writes during the backup');

  const restored = await startTestServer(t, {}, target);
  const ids = await threadIds(restored, creds);
  const answered = [...Array.from({ length: 40 }, (_, i) => `before-${i}`), ...Array.from({ length: answeredBefore }, (_, i) => `during-${i}`)];
  t.same(answered.filter((id) => !ids.has(id)), [], 'every thread answered before the backup began is in the copy');
  const text = await restored.api.call<Array<{ data: unknown }>>(creds, '/v2/crdt/get', crdt);
  t.same(text.body.result?.data.map((record) => record.data), ['hello from before the backup'], 'the Yjs document is in the copy');
  t.equal((await threadIds(live, creds)).size, 40 + written, 'the live server lost nothing and goes on');
});

t.test('with SECRET_KEY set the key is not copied, the copy opens with it, and --compact works', async (t) => {
  const secret = { SECRET_KEY: 'ab'.repeat(32) };
  const base = t.testdir();
  const dataDir = join(base, 'data');
  const created = await admin(['workspace', 'create', '--email', 'ops@example.com', '--data-dir', dataDir, '--json'], secret);
  t.equal(created.code, 0, created.stderr);
  const target = join(base, 'compact');
  const result = await admin(['backup', '--to', target, '--compact', '--data-dir', dataDir], secret);
  t.equal(result.code, 0, result.stderr);
  t.match(result.stdout, /SECRET_KEY is set: the copy needs that same key/);
  t.match(result.stdout, new RegExp(`restore: stop the server, then start it with DATA_DIR=${target}`));
  t.same(readdirSync(target), ['db'], 'no key file beside the copy');
  const listed = await admin(['keys', 'list', '--data-dir', target, '--json'], secret);
  t.equal(listed.code, 0, listed.stderr);
  t.match(JSON.parse(listed.stdout), [{ ownerEmail: 'ops@example.com' }], 'the copy reads with the same key');
});

t.test('mistakes are named: no --to, a target that is not empty, no data', async (t) => {
  const base = t.testdir();
  const dataDir = join(base, 'data');
  t.equal((await admin(['workspace', 'create', '--email', 'ops@example.com', '--data-dir', dataDir])).code, 0);
  const noTarget = await admin(['backup', '--data-dir', dataDir]);
  t.equal(noTarget.code, 2);
  t.match(noTarget.stderr, /backup needs --to/);
  const full = join(base, 'full');
  mkdirSync(full);
  writeFileSync(join(full, 'something'), 'x');
  const notEmpty = await admin(['backup', '--to', full, '--data-dir', dataDir]);
  t.equal(notEmpty.code, 1);
  t.match(notEmpty.stderr, /backup target .* is not empty/);
  const itself = await admin(['backup', '--to', dataDir, '--data-dir', dataDir]);
  t.equal(itself.code, 1);
  t.match(itself.stderr, /is the data directory itself/);
  const nothing = await admin(['backup', '--to', join(base, 'x'), '--data-dir', join(base, 'empty')]);
  t.equal(nothing.code, 1);
  t.match(nothing.stderr, /no Plait data in .*data\.mdb does not exist/);
});

t.test("a cluster node's cache is copied as it is, and said to be one", async (t) => {
  const base = t.testdir();
  const dataDir = join(base, 'node');
  const store = Store.open(dataDir);
  await store.transaction(() => store.records<unknown>(DB.meta).putSync(CLUSTER_CACHE_KEY, { stream: 'PLAIT_STATE', dirty: false }));
  await store.close();
  const result = await admin(['backup', '--to', join(base, 'copy'), '--data-dir', dataDir]);
  t.equal(result.code, 0, result.stderr);
  t.match(result.stdout, /a cluster node's cache: started alone it is a standalone server/);
  const copy = Store.open(join(base, 'copy'));
  t.match(copy.records<unknown>(DB.meta).get(CLUSTER_CACHE_KEY), { stream: 'PLAIT_STATE' }, 'the marker is copied');
  await copy.close();
});
