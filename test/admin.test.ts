// Tests the admin CLI against a data directory: create a workspace, list keys, reset a token; the server agrees.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { startTestServer } from './helpers/server.js';

const ADMIN = fileURLToPath(new URL('../src/admin.ts', import.meta.url));

function admin(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import=tsx', ADMIN, ...args], { env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : Number((error as { code?: number }).code ?? 1), stdout, stderr }),
    );
  });
}

interface Listed {
  workspaceId: string;
  ownerEmail: string;
  workspaceAuthToken: string;
  apiKeys: Array<{ apiKey: string; authTokens: string[] }>;
}

t.test('workspace create, keys list and token reset work on the data directory, and the server honours them', async (t) => {
  const dataDir = t.testdir();
  const created = await admin(['workspace', 'create', '--email', 'ops@example.com', '--data-dir', dataDir, '--json']);
  t.equal(created.code, 0, created.stderr);
  const workspace = JSON.parse(created.stdout) as { workspaceId: string; workspaceAuthToken: string; apiKey: string; authToken: string };
  t.match(workspace, { workspaceId: /^ws_/, apiKey: /\w+/, authToken: /\S+/ });

  const text = await admin(['workspace', 'create', '--email', 'second@example.com'], { DATA_DIR: dataDir });
  t.equal(text.code, 0, 'DATA_DIR is read like the server reads it');
  t.match(text.stdout, /^export PORT=8080 API_KEY=\S+ AUTH_TOKEN=\S+$/m, 'prints an export line for the walkthrough');

  const listed = JSON.parse((await admin(['keys', 'list', '--data-dir', dataDir, '--json'])).stdout) as Listed[];
  t.equal(listed.length, 2);
  const mine = listed.find((w) => w.workspaceId === workspace.workspaceId);
  t.match(mine, { ownerEmail: 'ops@example.com', workspaceAuthToken: workspace.workspaceAuthToken, apiKeys: [{ apiKey: workspace.apiKey, authTokens: [workspace.authToken] }] });

  const reset = await admin(['token', 'reset', '--api-key', workspace.apiKey, '--data-dir', dataDir, '--json']);
  t.equal(reset.code, 0, reset.stderr);
  const fresh = (JSON.parse(reset.stdout) as { authToken: string }).authToken;
  t.not(fresh, workspace.authToken);

  const { api } = await startTestServer(t, {}, dataDir);
  const client = (authToken: string) => api.client({ workspaceId: workspace.workspaceId, workspaceToken: workspace.workspaceAuthToken, apiKey: workspace.apiKey, authToken });
  t.equal((await client(fresh).workspaceApikeyconfigGet({})).status, 'success', 'the new token works');
  await t.rejects(client(workspace.authToken).workspaceApikeyconfigGet({}), { name: 'PlaitError', status: 'PERMISSION_DENIED' }, 'the old one does not');
});

t.test('mistakes are named: unknown command, missing option, unknown key', async (t) => {
  const dataDir = t.testdir();
  const unknown = await admin(['frobnicate', '--data-dir', dataDir]);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /unknown command "frobnicate"[\s\S]*usage:/);
  const missing = await admin(['workspace', 'create', '--data-dir', dataDir]);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /workspace create needs --email/);
  const noKey = await admin(['token', 'reset', '--api-key', 'nope', '--data-dir', dataDir]);
  t.equal(noKey.code, 1);
  t.match(noKey.stderr, /API key not found/);
  const help = await admin(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /keys list/);
});
