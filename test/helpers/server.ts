// Test helper: a real server on port 0 with LMDB in a tap test directory, torn down with the test.
import type { Test } from 'tap';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server.js';
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
  const server = await startServer(config, options.log ?? createLogger(config.logLevel), options);
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
 * Cluster nodes in this process on one DATA_DIR (today's clusters share it; docs/cluster.md). They share one Store:
 * two lmdb-js handles on one environment in one process deadlock (ServerOptions.store in src/server.ts says how), which
 * separate processes, as in production, do not. Stopped together at teardown (each `stop` is idempotent, so a test may
 * stop one earlier), the store closed after the last; `restart` starts a node again on the same store.
 */
export async function startClusterNodes(t: Test, nodes: ReadonlyArray<Partial<Config>>, dataDir: string = t.testdir(), options: TestStartOptions = {}): Promise<TestServer[]> {
  const store = Store.open(dataDir);
  const running: RunningServer[] = [];
  t.teardown(async () => {
    await Promise.all(running.map((server) => server.stop()));
    await store.close();
  });
  const start = async (overrides: Partial<Config>): Promise<TestServer> => {
    const config = testConfig(dataDir, overrides);
    // Each node's lines name it, so a cluster test's log can be read node by node.
    const server = await startServer(config, options.log ?? createLogger(config.logLevel, config.nodeId === undefined ? {} : { node: config.nodeId }), { ...options, store });
    running.push(server);
    const url = `http://127.0.0.1:${server.port}`;
    return {
      server,
      config,
      url,
      api: new ApiClient(url),
      restart: async () => {
        await server.stop();
        return start(overrides);
      },
    };
  };
  const started: TestServer[] = [];
  for (const overrides of nodes) started.push(await start(overrides));
  return started;
}
