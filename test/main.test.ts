import { execFile } from 'node:child_process';
import t from 'tap';
import { spawnMain, startServerProcess } from './helpers/process.js';

function run(command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('sh', ['-c', command], (error, stdout) => (error === null ? resolve(stdout) : reject(error)));
  });
}

t.test('first start prints a dev workspace and a curl line that works; later starts print nothing secret', async (t) => {
  const dataDir = t.testdir();
  const first = await startServerProcess(t, { DATA_DIR: dataDir });
  const banner = first.stdout();
  t.match(banner, /workspace id\s+ws_\w+/);
  t.match(banner, /listening on http:\/\/127\.0\.0\.1:\d+/);
  t.match(banner, /uWebSockets\.js: @(btc-vision\/uwebsockets\.js|trufflesuite\/uws-js-unofficial) \d+\.\d+/, 'the start says which build it loaded');
  const curl = /^\s*(curl .*)$/m.exec(banner)?.[1];
  if (curl === undefined) throw new Error(`no curl line in: ${banner}`);
  const answer = JSON.parse(await run(curl)) as { result?: { status: string; data: { ownerEmail: string } } };
  t.equal(answer.result?.status, 'success', 'the printed curl line works when pasted');
  const authToken = /auth token\s+(\S+)$/m.exec(banner)?.[1] ?? '';
  first.child.kill('SIGTERM');
  t.equal(await first.exited, 0, 'SIGTERM stops cleanly');

  const second = await startServerProcess(t, { DATA_DIR: dataDir });
  t.notMatch(second.stdout(), /auth token/);
  t.notOk(second.stdout().includes(authToken), 'the token is not printed again');
  second.child.kill('SIGINT');
  t.equal(await second.exited, 0, 'SIGINT stops cleanly');
});

t.test('DEV_BOOTSTRAP=false creates nothing', async (t) => {
  const server = await startServerProcess(t, { DATA_DIR: t.testdir(), DEV_BOOTSTRAP: 'false' });
  t.notMatch(server.stdout(), /dev workspace/);
  server.child.kill('SIGTERM');
  await server.exited;
});

t.test('refuses to start on the uWebSockets.js ws fallback shim, saying why', async (t) => {
  const { exited, output } = spawnMain({ DATA_DIR: t.testdir(), UWS_USE_FALLBACK: '1' });
  t.equal(await exited, 1);
  t.match(output.stderr, /fell back to its slow pure-JS \(ws\) shim/);
  t.match(output.stderr, /Plait refuses to start on the slow shim/);
});

t.test('a bad config value stops the start with a message naming it', async (t) => {
  const { exited, output } = spawnMain({ DATA_DIR: t.testdir(), PORT: 'x' });
  t.equal(await exited, 1);
  t.match(output.stderr, /plait: PORT must be an integer/);
});
