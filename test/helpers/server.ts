// Test helper: a real server on port 0 with LMDB in a tap test directory, torn down with the test.
import { join } from 'node:path';
import type { Test } from 'tap';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import type { ServerOptions } from '../../src/services.js';
import { ApiClient } from './api.js';

export interface TestServer {
  readonly server: RunningServer;
  readonly config: Config;
  readonly url: string;
  readonly api: ApiClient;
  /** Stops this server and starts a new one on the same data directory (and port 0 again). */
  restart(): Promise<TestServer>;
}

export function testConfig(dataDir: string, overrides: Partial<Config> = {}): Config {
  return loadConfig({}, [], { port: 0, dataDir, devBootstrap: false, logLevel: 'silent', ...overrides });
}

/** Test seams of startServer (e.g. `autoDeliver: false` keeps the outbox unread), and a logger to use instead of one at the config's level (a test reading the log). */
export interface TestStartOptions extends ServerOptions {
  readonly log?: Logger;
}

export async function startTestServer(t: Test, overrides: Partial<Config> = {}, dataDir?: string, options: TestStartOptions = {}): Promise<TestServer> {
  const config = testConfig(dataDir ?? t.testdir(), overrides);
  // A cluster node's lines name it, so a cluster test's log can be read node by node.
  const server = await startServer(config, options.log ?? createLogger(config.logLevel, config.nodeId === undefined ? {} : { node: config.nodeId }), options);
  t.teardown(() => server.stop());
  const url = `http://127.0.0.1:${server.port}`;
  return {
    server,
    config,
    url,
    api: new ApiClient(url),
    restart: async () => {
      await server.stop();
      return startTestServer(t, overrides, config.dataDir, options);
    },
  };
}

/**
 * Starts cluster nodes in this process, each on its own DATA_DIR under `dataDir` (`<dataDir>/<nodeId>`): in cluster
 * mode LMDB is each node's cache of the state stream, and a node refuses a DATA_DIR another node holds. Each is stopped
 * at teardown (`startTestServer`).
 */
export async function startClusterNodes(t: Test, nodes: ReadonlyArray<Partial<Config>>, dataDir: string = t.testdir(), options: TestStartOptions = {}): Promise<TestServer[]> {
  const started: TestServer[] = [];
  for (const [index, overrides] of nodes.entries()) started.push(await startTestServer(t, overrides, join(dataDir, overrides.nodeId ?? `node-${index}`), options));
  return started;
}
