// Owns the Plait server under test: the real server (startServer, config from env) in a bench host child.
import { serveHost } from '../lib/host.js';

// The bundled build (bench/lib/launch.ts builds it first, dist/bundle), loaded as plain JavaScript: what `npm start`
// runs. The URL is computed so TypeScript checks the calls against the sources the bundle was made from.
// BENCH_PLAIT_BUILD=src runs the unbundled compiled tree (dist/src) instead, to compare the two. PLAIT_BENCH_DIST
// (server kind plait-base) runs another build's dist/src instead, e.g. a copy of the build before a change, so before
// and after can be interleaved in one run.
const base = process.env['PLAIT_BENCH_DIST'];
const build = base !== undefined || process.env['BENCH_PLAIT_BUILD'] === 'src' ? 'src' : 'bundle';
const distRoot = base === undefined ? new URL('../../dist/', import.meta.url) : new URL(`file://${base}/`);
const dist = (path: string): string => new URL(`${build}/${path}`, distRoot).href;
const { loadConfig } = (await import(dist('config.js'))) as typeof import('../../src/config.js');
const { createLogger } = (await import(dist('log.js'))) as typeof import('../../src/log.js');
const { startServer } = (await import(dist('server.js'))) as typeof import('../../src/server.js');

serveHost(async () => {
  // env carries DATA_DIR, PERSISTENCE, DOC_IDLE_UNLOAD_MS, GROUP_COMMIT_MS, LOG_LEVEL… exactly as for src/main.ts
  // The REST benches drive one API key far past the per-key default (60,000 a minute): the limiter stays on the
  // path, with a limit no run reaches, unless the environment sets one.
  const keyLimit = process.env['API_KEY_RATE_LIMIT_PER_MINUTE'] === undefined ? { apiKeyRateLimitPerMinute: 1_000_000_000 } : {};
  // The same for the bytes (2 MiB a second by default): 32 connections at ~20k requests a second send ~3 MB a second
  // of bodies, and the load benches open many 1 MB documents through one key.
  const byteLimit = process.env['API_KEY_BYTES_PER_SECOND'] === undefined ? { apiKeyBytesPerSecond: 1024 * 1024 * 1024 * 1024 } : {};
  // And the sync messages (10,000 a second by default): the durability step drives ~20,000 updates a second through one key.
  const messageLimit = process.env['API_KEY_SYNC_MESSAGES_PER_SECOND'] === undefined ? { apiKeySyncMessagesPerSecond: 1_000_000_000 } : {};
  // And the share of the event loop (250 ms a second by default), at its most, 1,000: still timed on every frame, so
  // the bench pays what the budget costs, but never reached (a key cannot spend more than the loop's whole second).
  const cpuLimit = process.env['API_KEY_SYNC_CPU_MS_PER_SECOND'] === undefined ? { apiKeySyncCpuMsPerSecond: 1000 } : {};
  const config = loadConfig(process.env, [], { port: 0, host: '127.0.0.1', devBootstrap: false, ...keyLimit, ...byteLimit, ...messageLimit, ...cpuLimit });
  const server = await startServer(config, createLogger(config.logLevel));
  return { port: server.port, stop: () => server.stop(), settle: () => server.services.documentActors.updateLog.flush() };
});
