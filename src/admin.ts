#!/usr/bin/env node
// Owns the admin CLI (`npm run admin -- …`, bin `plait`): workspaces, keys and tokens straight from the data directory.
import { chmodSync, copyFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { keyFileOf, Secrets } from './auth/secrets.js';
import { ConfigError, loadConfig } from './config.js';
import { AppError } from './errors.js';
import { copyEnvironment } from './store/backup.js';
import { Store, StoreError } from './store/env.js';
import { Workspaces } from './tenant/workspaces.js';

const USAGE = `usage: npm run admin -- <command> [options]     (or: plait <command>, node dist/src/admin.js <command>)

commands:
  workspace create --email <owner email> [--name <workspace name>]
      create a workspace with a test API key; prints its credentials and an export line for the README walkthrough
  keys list
      every workspace with its workspace auth token, API keys and their auth tokens
  token reset --api-key <key>
      replace the API key's auth tokens with a new one (the old ones stop working)
  backup --to <new or empty dir> [--compact]
      a consistent copy of the data directory, safe while the server runs: every write answered before it began is
      in it. Restore: stop the server, start it with DATA_DIR=<that dir>. --compact leaves out free pages (slower)

options:
  --data-dir <dir>   the server's data directory (default: DATA_DIR, else ./data)
  --json             print JSON instead of text

Run the others while the server is stopped, or restart the server afterwards: a running server keeps accepting an
auth token it has already checked until it restarts. SECRET_KEY is read from the environment like the server does.`;

interface Options {
  readonly dataDir: string | undefined;
  readonly json: boolean;
  readonly email: string | undefined;
  readonly name: string | undefined;
  readonly apiKey: string | undefined;
  readonly to: string | undefined;
  readonly compact: boolean;
}

class UsageError extends Error {
  override readonly name = 'UsageError';
}

function parse(argv: readonly string[]): { command: string; options: Options } {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      'data-dir': { type: 'string' },
      json: { type: 'boolean', default: false },
      email: { type: 'string' },
      name: { type: 'string' },
      'api-key': { type: 'string' },
      to: { type: 'string' },
      compact: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help === true || positionals.length === 0) return { command: 'help', options: emptyOptions };
  return {
    command: positionals.join(' '),
    options: {
      dataDir: values['data-dir'],
      json: values.json === true,
      email: values.email,
      name: values.name,
      apiKey: values['api-key'],
      to: values.to,
      compact: values.compact === true,
    },
  };
}

const emptyOptions: Options = { dataDir: undefined, json: false, email: undefined, name: undefined, apiKey: undefined, to: undefined, compact: false };

type Print = (text: string) => void;

async function run(command: string, options: Options, print: Print): Promise<void> {
  if (command === 'help') return print(USAGE);
  const config = loadConfig(process.env, [], { devBootstrap: false, ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }) });
  // Not through Store.open, which writes (the schema stamp, a cluster cache's marker): a backup changes nothing.
  if (command === 'backup') return backup(config.dataDir, config.secretKey !== undefined, options, print);
  const store = Store.open(config.dataDir);
  try {
    const workspaces = new Workspaces(store, Secrets.load(config.dataDir, config.secretKey));
    switch (command) {
      case 'workspace create': {
        if (options.email === undefined) throw new UsageError('workspace create needs --email <owner email>');
        const created = await workspaces.create({ ownerEmail: options.email, ...(options.name === undefined ? {} : { workspaceName: options.name }) });
        const apiKey = Object.keys(created.apiKeyList)[0] ?? '';
        const authToken = workspaces.authTokens({ kind: 'workspace', workspaceId: created.id }, apiKey)[0]?.token ?? '';
        if (options.json) return print(JSON.stringify({ workspaceId: created.id, workspaceAuthToken: created.authToken, apiKey, authToken }));
        return print(
          [
            `workspace id          ${created.id}`,
            `workspace auth token  ${created.authToken}`,
            `API key               ${apiKey}`,
            `auth token            ${authToken}`,
            `export PORT=${config.port} API_KEY=${apiKey} AUTH_TOKEN=${authToken}`,
          ].join('\n'),
        );
      }
      case 'keys list': {
        const all = workspaces.list().map((workspace) => ({
          workspaceId: workspace.id,
          name: workspace.name,
          ownerEmail: workspace.owner.email,
          workspaceAuthToken: workspace.authToken,
          apiKeys: Object.keys(workspace.apiKeyList).map((apiKey) => ({
            apiKey,
            name: workspace.apiKeyList[apiKey]?.apiKeyName ?? '',
            type: workspace.apiKeyList[apiKey]?.type ?? '',
            authTokens: workspaces.authTokens({ kind: 'workspace', workspaceId: workspace.id }, apiKey).map((token) => token.token),
          })),
        }));
        if (options.json) return print(JSON.stringify(all));
        if (all.length === 0) return print(`no workspaces in ${config.dataDir}`);
        return print(
          all
            .map((w) =>
              [
                `workspace ${w.workspaceId}  "${w.name}"  owner ${w.ownerEmail}`,
                `  workspace auth token  ${w.workspaceAuthToken}`,
                ...w.apiKeys.map((k) => `  API key ${k.apiKey}  "${k.name}" (${k.type})\n${k.authTokens.map((t) => `    auth token  ${t}`).join('\n')}`),
              ].join('\n'),
            )
            .join('\n'),
        );
      }
      case 'token reset': {
        if (options.apiKey === undefined) throw new UsageError('token reset needs --api-key <key>');
        const record = workspaces.apiKeyRecord(options.apiKey);
        const fresh = await workspaces.resetAuthToken({ kind: 'workspace', workspaceId: record.workspaceId }, options.apiKey);
        if (options.json) return print(JSON.stringify({ apiKey: options.apiKey, authToken: fresh.token }));
        return print(`API key     ${options.apiKey}\nauth token  ${fresh.token}   (the old tokens no longer work)`);
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } finally {
    await store.close();
  }
}

/** `backup`: the environment copied by LMDB, and the server key beside it unless SECRET_KEY holds it. */
async function backup(dataDir: string, keyInEnvironment: boolean, options: Options, print: Print): Promise<void> {
  if (options.to === undefined) throw new UsageError('backup needs --to <new or empty directory>');
  const copied = await copyEnvironment(dataDir, options.to, { compact: options.compact });
  const keyFile = keyInEnvironment ? undefined : keyFileOf(dataDir);
  if (keyFile !== undefined) {
    const into = join(options.to, basename(keyFile));
    copyFileSync(keyFile, into);
    chmodSync(into, 0o600);
  }
  // Without the key the copy's stored secrets (auth tokens, signing keys, webhook secrets) cannot be read.
  const key = keyInEnvironment ? 'SECRET_KEY' : keyFile === undefined ? 'none' : 'copied';
  if (options.json) return print(JSON.stringify({ dataDir, to: options.to, ...copied, key }));
  const mb = (copied.bytes / 1024 / 1024).toFixed(1);
  print(
    [
      `copied ${dataDir} to ${options.to} (${mb} MB, schema ${copied.schemaVersion ?? 'none'})`,
      key === 'copied' ? '  server key copied beside it (mode 0600): keep the backup as private as the data directory' : '',
      key === 'SECRET_KEY' ? '  SECRET_KEY is set: the copy needs that same key to start, keep it with the backup' : '',
      copied.clusterCache ? "  this is a cluster node's cache: started alone it is a standalone server; a cluster's backup is its stream (docs/durability.md)" : '',
      `restore: stop the server, then start it with DATA_DIR=${options.to}`,
    ]
      .filter((line) => line !== '')
      .join('\n'),
  );
}

const { command, options } = (() => {
  try {
    return parse(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`plait admin: ${(error as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
})();

run(command, options, (text) => process.stdout.write(`${text}\n`)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`plait admin: ${error.message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  const known = error instanceof AppError || error instanceof ConfigError || error instanceof StoreError;
  process.stderr.write(`plait admin: ${known ? (error as Error).message : String((error as Error).stack ?? error)}\n`);
  process.exit(1);
});
