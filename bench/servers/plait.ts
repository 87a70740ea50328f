// Owns the Plait server under test: the real server (startServer, config from env) in a bench host child.
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { serveHost } from '../lib/host.js';

serveHost(async () => {
  // env carries DATA_DIR, PERSISTENCE, DOC_IDLE_UNLOAD_MS, GROUP_COMMIT_MS, LOG_LEVEL… exactly as for src/main.ts
  const config = loadConfig(process.env, [], { port: 0, host: '127.0.0.1', devBootstrap: false });
  const server = await startServer(config, createLogger(config.logLevel));
  return { port: server.port, stop: () => server.stop() };
});
