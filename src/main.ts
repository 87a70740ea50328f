// Owns the process: config from env and flags, start, the ready line, the dev banner, signals and graceful stop.
import { devBootstrap } from './bootstrap.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './log.js';
import { startServer } from './server.js';
import { UwsFallbackError } from './http/uws.js';
import { StoreError } from './store/env.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env, process.argv.slice(2));
  const log = createLogger(config.logLevel);
  const server = await startServer(config, log);
  const banner = await devBootstrap({ ...config, port: server.port }, server.services.store, server.services.workspaces, server.services.ownerEmails);
  if (banner !== undefined) process.stdout.write(`${banner}\n`);
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  log.info(`listening on http://${host}:${server.port}`, { dataDir: config.dataDir, pid: process.pid });

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info('stopping', { signal });
    server.stop().then(
      () => {
        log.info('stopped cleanly');
        process.exit(0);
      },
      (error: unknown) => {
        log.error('stop failed', { error });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('unhandledRejection', (error) => log.error('unhandled rejection', { error }));
}

main().catch((error: unknown) => {
  const known = error instanceof ConfigError || error instanceof UwsFallbackError || error instanceof StoreError;
  process.stderr.write(`plait: ${known ? (error as Error).message : String((error as Error).stack ?? error)}\n`);
  process.exit(1);
});
