// Tests the newcomer's path: the README's first screen, its shell walkthrough verbatim in bash and zsh, npm start and SIGTERM.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import t from 'tap';
import { readme } from './helpers/readme.js';
import { startServerProcess } from './helpers/process.js';

const SHELLS = ['bash', 'zsh'] as const;

function shellPath(shell: string): string | undefined {
  return [`/usr/bin/${shell}`, `/bin/${shell}`].find((path) => existsSync(path));
}

/** The first ```sh block after the walkthrough heading, exactly as printed in the README. */
function walkthroughBlock(): string {
  const heading = readme.indexOf('### A first document, from the shell');
  const open = readme.indexOf('```sh\n', heading);
  const close = readme.indexOf('\n```', open + 6);
  if (heading === -1 || open === -1 || close === -1) throw new Error('no walkthrough block in the README');
  return readme.slice(open + 6, close + 1);
}

function run(shell: string, script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(shell, ['-c', script], { env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '' } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : Number((error as { code?: number }).code ?? 1), stdout, stderr }),
    );
  });
}

t.test("the README's first screen says what Plait is, then the two commands, then where the API reference is", async (t) => {
  const firstScreen = readme.split('\n').slice(0, 25).join('\n');
  const what = firstScreen.indexOf('Plait is a self-hostable collaboration backend');
  const install = firstScreen.indexOf('npm install && npm start');
  const reference = firstScreen.search(/API reference: <http:\/\/127\.0\.0\.1:8080\/docs>/);
  t.ok(what >= 0 && install > what && reference > install, `in order: ${what}, ${install}, ${reference}`);
});

for (const shell of SHELLS) {
  const path = shellPath(shell);
  const jq = shellPath('jq') ?? (existsSync('/usr/local/bin/jq') ? '/usr/local/bin/jq' : undefined);
  const skip = path === undefined ? `${shell} is not installed (apt-get install ${shell}); skipping` : jq === undefined ? 'jq is not installed (apt-get install jq); skipping' : false;
  t.test(`the shell walkthrough runs verbatim in ${shell} with the export line the first start prints`, { skip }, async (t) => {
    const server = await startServerProcess(t, { DATA_DIR: t.testdir() });
    const exportLine = /^\s*(export PORT=\d+ API_KEY=\S+ AUTH_TOKEN=\S+)$/m.exec(server.stdout())?.[1];
    if (exportLine === undefined) throw new Error(`no export line in: ${server.stdout()}`);
    const result = await run(path as string, `set -e\n${exportLine}\n${walkthroughBlock()}`);
    t.equal(result.code, 0, `${shell} exits 0: ${result.stderr}`);
    const lines = result.stdout.trim().split('\n');
    t.match(lines[0], /^user token: ey[\w-]+\.[\w-]+\.[\w-]+$/, 'jq pulled the user token out');
    const outcomes = lines.slice(1).map((line) => JSON.parse(line) as { result?: { status: string; data: unknown } });
    t.equal(outcomes.length, 3, 'add, update, get');
    t.ok(outcomes.every((o) => o.result?.status === 'success'), JSON.stringify(outcomes));
    t.match(outcomes[2]?.result?.data, [{ id: 'main', data: 'hello, world' }], 'get reads what update wrote');
    server.child.kill('SIGTERM');
    t.equal(await server.exited, 0);
  });
}

t.test('SIGTERM to the `npm start` process stops the server', { timeout: 300_000 }, async (t) => {
  // `env -u NODE_OPTIONS` execs npm (same pid): tap's process tracking re-adds its loaders to every child's
  // NODE_OPTIONS, and under them npm's tsc build fails.
  const child = spawn('env', ['-u', 'NODE_OPTIONS', 'npm', 'start', '--silent'], {
    cwd: new URL('..', import.meta.url),
    // A clean environment as a newcomer's shell has: tap's NODE_OPTIONS loaders must not reach npm's node.
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', PORT: '0', DATA_DIR: t.testdir(), DEV_BOOTSTRAP: 'false', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const ended = new Promise<void>((resolve) => child.stdout.on('end', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (match?.[1] !== undefined) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`npm start exited (${String(code)}) before listening: ${output} ${errors}`)));
  });
  t.match(output, /uWebSockets\.js: @\S+ \d+\.\d+/, 'the start says which uWebSockets.js build it loaded');
  t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  child.kill('SIGTERM');
  // stdout ends when the last process holding it (node, under npm and sh) has exited.
  await ended;
  t.match(output, /"msg":"stopped cleanly"/, 'node stopped cleanly');
  await t.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'nothing listens any more');
});
