// Owns the server configuration: one table of options read from env vars and --flags, validated and frozen.
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { parseAllowedNetworks } from './allowed-networks.js';
import { DEFAULT_MAX_COMMENT_THREAD_BYTES, DEFAULT_MAX_PENDING_JOBS_PER_KEY, DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT } from './limits.js';

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly devBootstrap: boolean;
  readonly logLevel: LogLevel;
  readonly maxBodyBytes: number;
  readonly corsOrigin: string;
  readonly publicRateLimitPerMinute: number;
  readonly secretKey: string | undefined;
  readonly wsMaxPayloadBytes: number;
  readonly wsMaxBackpressureBytes: number;
  readonly wsIdleTimeoutSeconds: number;
  readonly maxConnectionsPerDocument: number;
  readonly maxConnectionsPerKey: number;
  readonly mailboxCapacity: number;
  readonly docIdleUnloadMs: number;
  readonly joinStateCacheBytes: number;
  readonly maxLoadedDocuments: number;
  readonly maxLoadedDocumentsPerKey: number;
  readonly maxLoadedDocumentBytes: number;
  readonly maxLoadedDocumentBytesPerKey: number;
  readonly maxDocumentBytes: number;
  readonly maxCommentThreadBytes: number;
  readonly groupCommitMs: number;
  readonly compactAfterUpdates: number;
  readonly compactAfterBytes: number;
  readonly persistence: boolean;
  readonly presenceOfflineTtlMs: number;
  readonly maxPresenceUsersPerDocument: number;
  readonly maxPendingJobsPerKey: number;
  readonly metricsPort: number | undefined;
  readonly outboundAllowedNetworks: readonly string[];
  readonly smtpUrl: string | undefined;
  readonly emailFrom: string;
  readonly sendgridBaseUrl: string;
  readonly agentPoolSize: number;
  readonly agentQueueLimit: number;
  /** Tasks one API key may have waiting or running in the agent pool; undefined: AGENT_POOL_SIZE + a quarter of AGENT_QUEUE_LIMIT. */
  readonly agentTasksPerKey: number | undefined;
  readonly agentRunTimeoutMs: number;
  readonly agentRunRetentionMs: number;
  readonly agentFetchTimeoutMs: number;
  readonly agentFetchMaxBytes: number;
  readonly chromiumPath: string | undefined;
  readonly llmABaseUrl: string | undefined;
  readonly llmAModel: string | undefined;
  readonly llmAApiKey: string | undefined;
  readonly llmBBaseUrl: string | undefined;
  readonly llmBModel: string | undefined;
  readonly llmBApiKey: string | undefined;
  readonly emailRateLimitPerHour: number;
  readonly emailStatusRateLimitPerMinute: number;
  readonly apiKeyRateLimitPerMinute: number;
  readonly apiKeySyncMessagesPerSecond: number;
  readonly apiKeySyncCpuMsPerSecond: number;
  /** Bytes per second one API key may send, REST bodies and sync frames together (src/byte-budget.ts); 0: off. */
  readonly apiKeyBytesPerSecond: number;
  readonly rateLimitMaxKeys: number;
  readonly trustedProxies: readonly string[];
  readonly consoleOrigins: readonly string[];
  readonly publicUrl: string | undefined;
  readonly emailVerificationGraceMs: number;
  readonly verificationLinkTtlMs: number;
  /** How long an advanced webhook endpoint's settled messages (and their attempts) are kept; 0: forever. */
  readonly webhookMessageRetentionMs: number;
  readonly loginLinkTtlMs: number;
  readonly userTokenLifetimeSeconds: number;
  readonly stopDrainMs: number;
  /** Cluster mode (src/cluster/) when set; undefined: one process, nothing external. */
  readonly natsUrl: string | undefined;
  /** This node's name in the cluster; undefined: host:port, filled in at start. */
  readonly nodeId: string | undefined;
  readonly clusterLeaseMs: number;
  /** Stream replicas of the cluster's KV buckets (leases, roles): 1 on one NATS server, 3 in production. */
  readonly clusterReplicas: number;
  /** Cluster mode: bytes of the state log (stream and blobs) since the last checkpoint that trigger the next one; 0: never. */
  readonly clusterCheckpointBytes: number;
  readonly awarenessMaxStateBytes: number;
  readonly awarenessUpdatesPerSecond: number;
  /** Awareness bytes times recipients per second per API key (src/doc/actor.ts); 0: off. */
  readonly apiKeyAwarenessBytesPerSecond: number;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

type Parser<T> = (raw: string, name: string) => T;

interface OptionSpec<K extends keyof Config> {
  readonly key: K;
  readonly env: string;
  readonly fallback: Config[K];
  readonly parse: Parser<Config[K]>;
  readonly doc: string;
  /** How the default reads in the README when `String(fallback)` would not say it well. */
  readonly shown?: string;
}

const text: Parser<string> = (raw) => raw;
const optionalText: Parser<string | undefined> = (raw) => (raw === '' ? undefined : raw);
const bool: Parser<boolean> = (raw, name) => {
  const value = raw.toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(`${name} must be a boolean (true/false), got "${raw}"`);
};
const integer = (min: number, max: number): Parser<number> => (raw, name) => {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
};
const optionalPort: Parser<number | undefined> = (raw, name) => (raw === '' ? undefined : integer(0, 65535)(raw, name));
const optionalInteger = (min: number, max: number): Parser<number | undefined> => (raw, name) => (raw === '' ? undefined : integer(min, max)(raw, name));
const logLevel: Parser<LogLevel> = (raw, name) => {
  const found = LOG_LEVELS.find((level) => level === raw);
  if (found === undefined) throw new ConfigError(`${name} must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  return found;
};

const networks: Parser<readonly string[]> = (raw, name) => {
  const entries = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  try {
    parseAllowedNetworks(entries);
  } catch (error) {
    throw new ConfigError(`${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return Object.freeze(entries);
};
const httpUrl: Parser<string> = (raw, name) => {
  if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol)) throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
};
const smtpUrl: Parser<string | undefined> = (raw, name) => {
  if (raw === '') return undefined;
  if (!URL.canParse(raw) || !/^smtps?:$/.test(new URL(raw).protocol)) throw new ConfigError(`${name} must be an smtp:// or smtps:// URL`);
  return raw;
};

const natsUrl: Parser<string | undefined> = (raw, name) => {
  if (raw === '') return undefined;
  for (const server of raw.split(',')) {
    const url = server.trim().includes('://') ? server.trim() : `nats://${server.trim()}`;
    if (!URL.canParse(url) || !/^(nats|tls):$/.test(new URL(url).protocol)) throw new ConfigError(`${name} must be nats://host:port (comma-separated for several servers), got "${raw}"`);
  }
  return raw;
};

const MiB = 1024 * 1024;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** `90s`, `15m`, `12h`, `30d` (or bare milliseconds); `off` is 0 where the option allows it. */
const duration = (min: number, allowOff: boolean): Parser<number> => (raw, name) => {
  const text = raw.trim().toLowerCase();
  if (allowOff && (text === 'off' || text === '0')) return 0;
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(text);
  const value = match === null ? Number.NaN : Number(match[1]) * (UNIT_MS[match[2] ?? 'ms'] ?? Number.NaN);
  if (!Number.isSafeInteger(value) || value < min) {
    throw new ConfigError(`${name} must be a duration such as 90s, 15m, 12h or 30d (at least ${min} ms)${allowOff ? ' or off' : ''}, got "${raw}"`);
  }
  return value;
};
const list = (check: (item: string, name: string) => string): Parser<readonly string[]> => (raw, name) =>
  raw.split(',').map((item) => item.trim()).filter((item) => item !== '').map((item) => check(item, name));
const ipOrCidr = (item: string, name: string): string => {
  const [address = '', prefix, extra] = item.split('/');
  const family = isIP(address);
  const bits = family === 6 ? 128 : 32;
  const okPrefix = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
  if (family === 0 || !okPrefix || extra !== undefined) throw new ConfigError(`${name}: "${item}" is not an IP address or CIDR range`);
  return item;
};
const origin = (item: string, name: string): string => {
  let url: URL;
  try {
    url = new URL(item);
  } catch {
    throw new ConfigError(`${name}: "${item}" is not an origin such as https://console.example.com`);
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== item.replace(/\/$/, '')) {
    throw new ConfigError(`${name}: "${item}" must be an http(s) origin (scheme, host, optional port; no path)`);
  }
  return url.origin;
};
const baseUrl: Parser<string | undefined> = (raw, name) => {
  if (raw === '') return undefined;
  try {
    const url = new URL(raw);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.href.replace(/\/$/, '');
  } catch {
    // reported below
  }
  throw new ConfigError(`${name} must be an http(s) URL such as https://plait.example.com, got "${raw}"`);
};

/** Every option, in README order. The flag is the env name in lower kebab case: PORT -> --port. */
const OPTIONS: readonly OptionSpec<keyof Config>[] = [
  { key: 'host', env: 'HOST', fallback: '127.0.0.1', parse: text, doc: 'Address to listen on.' },
  { key: 'port', env: 'PORT', fallback: 8080, parse: integer(0, 65535), doc: 'Port for REST and WebSocket sync (0 picks a free port).' },
  { key: 'dataDir', env: 'DATA_DIR', fallback: './data', parse: text, doc: 'Directory of the LMDB environment (`db/`) and `server.key`.' },
  { key: 'devBootstrap', env: 'DEV_BOOTSTRAP', fallback: true, parse: bool, doc: 'On an empty data directory, create a dev workspace and print its credentials once. Set false in production.' },
  { key: 'logLevel', env: 'LOG_LEVEL', fallback: 'info', parse: logLevel, doc: '`debug`, `info`, `warn`, `error` or `silent`; logs are JSON lines on stdout.' },
  { key: 'maxBodyBytes', env: 'MAX_BODY_BYTES', fallback: MiB, parse: integer(1024, 64 * MiB), doc: 'Largest accepted request body; larger ones get 413 while streaming.' },
  { key: 'corsOrigin', env: 'CORS_ORIGIN', fallback: '*', parse: text, doc: 'Value of `Access-Control-Allow-Origin` on every response.' },
  { key: 'publicRateLimitPerMinute', env: 'PUBLIC_RATE_LIMIT_PER_MINUTE', fallback: 120, parse: integer(0, 1_000_000), doc: 'Requests per minute per client address (IPv6: per /64) for the public operations; 0 turns it off.' },
  { key: 'emailRateLimitPerHour', env: 'EMAIL_RATE_LIMIT_PER_HOUR', fallback: 10, parse: integer(0, 1_000_000), doc: 'Requests per hour per target email address for the public operations that send mail (workspace create, send login link); 0 turns it off.' },
  { key: 'emailStatusRateLimitPerMinute', env: 'EMAIL_STATUS_RATE_LIMIT_PER_MINUTE', fallback: 30, parse: integer(0, 1_000_000), doc: 'Get Email Verification Status calls per minute per target email address; 0 turns it off.' },
  { key: 'apiKeyRateLimitPerMinute', env: 'API_KEY_RATE_LIMIT_PER_MINUTE', fallback: 60_000, parse: integer(0, 1_000_000_000), doc: 'Requests per minute per API key (per workspace for workspace-auth operations), with bursts up to the same number; 0 turns it off.' },
  { key: 'apiKeyBytesPerSecond', env: 'API_KEY_BYTES_PER_SECOND', fallback: 2 * MiB, parse: integer(0, 1024 * 1024 * MiB), doc: 'Bytes per second one API key may send, REST request bodies and sync messages (type 0; awareness is bounded per connection) together (per workspace for workspace-auth operations), with bursts of 8 seconds\' worth (at least the largest frame or body accepted, so each passes on a rested key); past it REST gets 429 `RESOURCE_EXHAUSTED` with `Retry-After` and the sending sync socket is closed with 1013 (the client reconnects and resyncs), so one workspace\'s large writes cannot take the event loop and the disk every other needs. 0 turns it off.' },
  { key: 'apiKeySyncMessagesPerSecond', env: 'API_KEY_SYNC_MESSAGES_PER_SECOND', fallback: 10_000, parse: integer(0, 1_000_000_000), doc: 'Sync messages (type 0: updates and state vectors; awareness is bounded per connection) one API key\'s connections may send per second, over all its documents, with bursts of 2 seconds\' worth; past it the sending socket is closed with 1013 before the message is read (the client reconnects and resyncs), so a flood of small updates, each a Yjs apply and a log write, cannot take the event loop every other workspace needs. 0 turns it off.' },
  { key: 'apiKeySyncCpuMsPerSecond', env: 'API_KEY_SYNC_CPU_MS_PER_SECOND', fallback: 250, parse: integer(0, 1000), doc: 'Milliseconds of the event loop one API key\'s sync frames may take a second to apply, over all its documents in this process, with bursts of 2 seconds\' worth; each frame\'s time is measured and paid for afterwards, into a debt of up to a minute\'s worth, and while the key has nothing left its next frames close their sockets with 1013 (the clients reconnect and resync), so one workspace\'s costly updates cannot take the loop every other needs. 0 turns it off.' },
  { key: 'rateLimitMaxKeys', env: 'RATE_LIMIT_MAX_KEYS', fallback: 50_000, parse: integer(100, 10_000_000), doc: 'Keys (addresses, emails, API keys) each rate limiter remembers; past it the least recently seen is forgotten, so memory stays bounded.' },
  { key: 'trustedProxies', env: 'TRUSTED_PROXIES', fallback: [], parse: list(ipOrCidr), doc: 'Comma-separated addresses or CIDR ranges of reverse proxies; only a peer in this list has its `X-Forwarded-For` believed.' },
  { key: 'consoleOrigins', env: 'CONSOLE_ORIGIN', fallback: [], parse: list(origin), doc: 'Origin(s) of the console, comma-separated (`https://console.example.com`); login-link `continueUrl`s must be on one of them, on this server\'s own origin (its `/console`) or on `localhost`.' },
  { key: 'publicUrl', env: 'PUBLIC_URL', fallback: undefined, parse: baseUrl, doc: 'Base URL of this server as users reach it, for the links in emails; default `http://HOST:PORT`.' },
  { key: 'emailVerificationGraceMs', env: 'EMAIL_VERIFICATION_GRACE', fallback: 30 * 86_400_000, parse: duration(1000, true), doc: 'How long a new workspace\'s API keys work before the owner verifies the email address (`30d`, `12h`, …; `off`: never expire). The dev workspace is exempt.', shown: '30d' },
  { key: 'verificationLinkTtlMs', env: 'VERIFICATION_LINK_TTL', fallback: 7 * 86_400_000, parse: duration(1000, false), doc: 'Lifetime of the one-time link in the owner verification email.', shown: '7d' },
  { key: 'webhookMessageRetentionMs', env: 'WEBHOOK_MESSAGE_RETENTION', fallback: 90 * 86_400_000, parse: duration(3_600_000, true), doc: 'How long an advanced webhook endpoint keeps a settled message (`success` or `fail`) and its attempts in its message log, counted from when the message was made (`90d`, `12h`, …; `off`: forever). Pending messages stay until they settle.', shown: '90d' },
  { key: 'loginLinkTtlMs', env: 'LOGIN_LINK_TTL', fallback: 15 * 60_000, parse: duration(1000, false), doc: 'Lifetime of the one-time sign-in link sent by Send Login Link.', shown: '15m' },
  { key: 'secretKey', env: 'SECRET_KEY', fallback: undefined, parse: optionalText, doc: 'Master key (hex or base64, at least 32 bytes) for secrets at rest; default: `DATA_DIR/server.key`, created on first start.' },
  { key: 'wsMaxPayloadBytes', env: 'WS_MAX_PAYLOAD_BYTES', fallback: 16 * MiB, parse: integer(1024, 256 * MiB), doc: 'Largest accepted WebSocket message.' },
  { key: 'wsMaxBackpressureBytes', env: 'WS_MAX_BACKPRESSURE_BYTES', fallback: 8 * MiB, parse: integer(64 * 1024, 1024 * MiB), doc: 'Bytes waiting for a slow socket (its send buffer, and frames queued behind the one being written) before it is closed with 1013 (the client reconnects and resyncs).' },
  { key: 'wsIdleTimeoutSeconds', env: 'WS_IDLE_TIMEOUT_SECONDS', fallback: 120, parse: integer(8, 960), doc: 'A socket silent this long is closed (clients ping well within it).' },
  { key: 'maxConnectionsPerDocument', env: 'MAX_CONNECTIONS_PER_DOCUMENT', fallback: 2000, parse: integer(1, 1_000_000), doc: 'Sync connections one document accepts; more are refused.' },
  { key: 'maxConnectionsPerKey', env: 'MAX_CONNECTIONS_PER_KEY', fallback: 10_000, parse: integer(0, 10_000_000), doc: 'Sync connections one API key may hold open in this process, over all its documents; more are refused with 429 at the upgrade, so one workspace cannot take the memory every other needs. 0: no limit.' },
  { key: 'mailboxCapacity', env: 'MAILBOX_CAPACITY', fallback: 10_000, parse: integer(16, 10_000_000), doc: 'Queued messages per document actor before callers get RESOURCE_EXHAUSTED.' },
  { key: 'docIdleUnloadMs', env: 'DOC_IDLE_UNLOAD_MS', fallback: 30_000, parse: integer(0, 86_400_000), doc: 'A document with no connection and nothing pending is snapshotted and unloaded after this delay.' },
  { key: 'joinStateCacheBytes', env: 'JOIN_STATE_CACHE_BYTES', fallback: 32 * MiB, parse: integer(0, 64 * 1024 * MiB), doc: 'Bytes of encoded document state kept for late joiners over all loaded documents (each document of 64 KiB or more keeps its whole state as one ready frame, later changes appended as update frames until 64 of them or a quarter of its size, least recently used dropped first); 0 encodes the state for every joiner.' },
  { key: 'maxLoadedDocuments', env: 'MAX_LOADED_DOCUMENTS', fallback: 50_000, parse: integer(0, 100_000_000), doc: 'Documents loaded in memory at once, over all API keys; past it the least recently used ones with no connection and nothing pending are snapshotted and unloaded before `DOC_IDLE_UNLOAD_MS`. Documents with a sync connection are never unloaded for it. 0: no limit.' },
  { key: 'maxLoadedDocumentsPerKey', env: 'MAX_LOADED_DOCUMENTS_PER_KEY', fallback: 10_000, parse: integer(0, 100_000_000), doc: 'Documents one API key may have loaded at once; past it that key\'s least recently used idle documents are unloaded first, and when all of them are held by connections or requests a REST request that would load one more gets 429 RESOURCE_EXHAUSTED, so one workspace cannot push the others\' documents out. 0: no limit.' },
  { key: 'maxLoadedDocumentBytes', env: 'MAX_LOADED_DOCUMENT_BYTES', fallback: 1024 * MiB, parse: integer(0, 1024 * 1024 * MiB), doc: 'Estimated bytes of all loaded documents (each store\'s last snapshot plus the log since, as stored), over all API keys; past it the least recently used idle documents are unloaded as for `MAX_LOADED_DOCUMENTS`. 0: no limit.' },
  { key: 'maxLoadedDocumentBytesPerKey', env: 'MAX_LOADED_DOCUMENT_BYTES_PER_KEY', fallback: 256 * MiB, parse: integer(0, 1024 * 1024 * MiB), doc: 'Estimated bytes of one API key\'s loaded documents; past it that key\'s idle documents go first and REST loads are refused as for `MAX_LOADED_DOCUMENTS_PER_KEY`. 0: no limit.' },
  { key: 'maxDocumentBytes', env: 'MAX_DOCUMENT_BYTES', fallback: 64 * MiB, parse: integer(0, 1024 * 1024 * MiB), doc: 'Bytes one document may hold as stored (each store\'s last snapshot plus the log since); a sync edit that would pass it is not applied and its connection is closed with 4413, a REST write gets 400 FAILED_PRECONDITION (docs/limits.md). 0: no limit.' },
  { key: 'maxCommentThreadBytes', env: 'MAX_COMMENT_THREAD_BYTES', fallback: DEFAULT_MAX_COMMENT_THREAD_BYTES, parse: integer(0, 1024 * MiB), doc: 'Bytes of comments one comment thread may hold, each comment measured as JSON; a comment add or edit that would take a thread past it gets 400 FAILED_PRECONDITION, as one past 1,000 comments a thread does (a thread is one record, written whole by every change: docs/limits.md). 0: no limit.' },
  { key: 'groupCommitMs', env: 'GROUP_COMMIT_MS', fallback: 100, parse: integer(0, 1000), doc: 'Update-log appends within this window share one LMDB transaction (0: one event-loop turn), and a sync connection\'s presence row waits up to it for company. Peers never wait for it and REST writes commit at once; a process crash can lose the updates of the last window, which clients resend on reconnect (docs/durability.md).' },
  { key: 'compactAfterUpdates', env: 'COMPACT_AFTER_UPDATES', fallback: 1000, parse: integer(1, 10_000_000), doc: 'Log entries of one store past which a snapshot is taken and the log truncated, once the log also holds a quarter of the last snapshot\'s bytes (at 16 times this count, whatever the sizes).' },
  { key: 'compactAfterBytes', env: 'COMPACT_AFTER_BYTES', fallback: 4 * MiB, parse: integer(1024, 1024 * MiB), doc: 'Log bytes of one store that trigger a snapshot and log truncation, once the log also holds a quarter of the last snapshot\'s bytes.' },
  { key: 'persistence', env: 'PERSISTENCE', fallback: true, parse: bool, doc: 'false keeps documents in memory only (for benchmarks); REST metadata is still stored.' },
  { key: 'metricsPort', env: 'METRICS_PORT', fallback: undefined, parse: optionalPort, doc: 'Serve `GET /metrics` (Prometheus) on this port of `HOST` instead of the main port (0 picks a free port). Unset: on the main port.' },
  { key: 'presenceOfflineTtlMs', env: 'PRESENCE_OFFLINE_TTL_MS', fallback: 60_000, parse: integer(0, 86_400_000), doc: 'How long a disconnected user stays `offline` in presence before removal.' },
  { key: 'maxPresenceUsersPerDocument', env: 'MAX_PRESENCE_USERS_PER_DOCUMENT', fallback: DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT, parse: integer(1, 1_000_000), doc: 'Users one document\'s presence list holds, REST and sync alike. At the limit a new user takes the place of the user offline longest; when too few are offline, a presence add or update bringing new users gets 400 FAILED_PRECONDITION naming the limit, and a new sync connection\'s user is left out of the list while its connection works (docs/limits.md). Users already listed can always update and leave.' },
  { key: 'maxPendingJobsPerKey', env: 'MAX_PENDING_JOBS_PER_KEY', fallback: DEFAULT_MAX_PENDING_JOBS_PER_KEY, parse: integer(1, 1_000_000), doc: 'Background jobs (GDPR erasures, document migrations) one API key may have pending or running, counted from their stored rows; past it a new one gets 429 RESOURCE_EXHAUSTED naming the limit, with `Retry-After`, and nothing is recorded. The same erase or migration still waiting for a slot is answered with its job id instead (docs/limits.md).' },
  { key: 'outboundAllowedNetworks', env: 'OUTBOUND_ALLOWED_NETWORKS', fallback: [], parse: networks, doc: 'Comma-separated CIDRs that outbound HTTP (webhooks, agents) may reach although private or loopback, e.g. `127.0.0.0/8` for local development; everything non-public is refused otherwise.' },
  { key: 'smtpUrl', env: 'SMTP_URL', fallback: undefined, parse: smtpUrl, doc: 'SMTP server for `default` email, e.g. `smtp://user:pass@host:587` (`smtps://` for implicit TLS); unset: each email is logged as one JSON line instead.' },
  { key: 'emailFrom', env: 'EMAIL_FROM', fallback: 'Plait <no-reply@plait.localhost>', parse: text, doc: 'Sender of `default` email when the workspace sets no `fromEmail`.' },
  { key: 'sendgridBaseUrl', env: 'SENDGRID_BASE_URL', fallback: 'https://api.sendgrid.com', parse: httpUrl, doc: 'Base URL of the SendGrid v3 API used by `sendgrid` email (tests point it at a local fake).' },
  { key: 'agentPoolSize', env: 'AGENT_POOL_SIZE', fallback: 2, parse: integer(1, 64), doc: 'Worker threads that run agents, prompt validation and ask-ai (piscina).' },
  { key: 'agentQueueLimit', env: 'AGENT_QUEUE_LIMIT', fallback: 100, parse: integer(1, 100_000), doc: 'Agent tasks waiting for a worker before new ones get RESOURCE_EXHAUSTED.' },
  { key: 'agentTasksPerKey', env: 'AGENT_TASKS_PER_KEY', fallback: undefined, parse: optionalInteger(1, 100_000), doc: 'Agent tasks one API key may have waiting or running at once; past it that key\'s new ones get RESOURCE_EXHAUSTED while other keys\' are still taken, so one workspace cannot fill the queue. Default: `AGENT_POOL_SIZE` plus a quarter of `AGENT_QUEUE_LIMIT` (at least 1).' },
  { key: 'agentRunTimeoutMs', env: 'AGENT_RUN_TIMEOUT_MS', fallback: 120_000, parse: integer(1000, 3_600_000), doc: 'Time limit of one agent task; past it the worker thread is ended and the run fails with TIMEOUT.' },
  { key: 'agentRunRetentionMs', env: 'AGENT_RUN_RETENTION', fallback: 90 * 86_400_000, parse: duration(3_600_000, true), doc: 'How long a settled agent run (`completed`, `failed`, `cancelled`) is kept with its results, counted from when it started (`90d`, `12h`, …; `off`: forever); older runs are removed hourly. Runs still running stay; the agents\' run counts keep counting.', shown: '90d' },
  { key: 'agentFetchTimeoutMs', env: 'AGENT_FETCH_TIMEOUT_MS', fallback: 10_000, parse: integer(100, 600_000), doc: 'Time limit of each page, link or API fetch an agent makes.' },
  { key: 'agentFetchMaxBytes', env: 'AGENT_FETCH_MAX_BYTES', fallback: 5 * MiB, parse: integer(1024, 256 * MiB), doc: 'Largest response body an agent fetch reads; a larger page fails the run with TOO_LARGE.' },
  { key: 'chromiumPath', env: 'CHROMIUM_PATH', fallback: '/usr/bin/chromium', parse: optionalText, doc: 'Chromium for browser strategies (screenshot, computed styles, site audit, browser-agent); when missing those runs fail with FAILED_PRECONDITION.' },
  { key: 'llmABaseUrl', env: 'LLM_A_BASE_URL', fallback: undefined, parse: optionalText, doc: 'Provider `llm_a`: base URL of an OpenAI-compatible chat completions API (e.g. `http://127.0.0.1:8000/v1` for llama.cpp, vLLM, Ollama).' },
  { key: 'llmAModel', env: 'LLM_A_MODEL', fallback: undefined, parse: optionalText, doc: 'Model name sent to `llm_a`; with LLM_A_BASE_URL it enables the provider.' },
  { key: 'llmAApiKey', env: 'LLM_A_API_KEY', fallback: undefined, parse: optionalText, doc: 'API key for `llm_a` (sent as a bearer token; never logged).' },
  { key: 'llmBBaseUrl', env: 'LLM_B_BASE_URL', fallback: undefined, parse: optionalText, doc: 'Provider `llm_b`: base URL of an Anthropic-style messages API.' },
  { key: 'llmBModel', env: 'LLM_B_MODEL', fallback: undefined, parse: optionalText, doc: 'Model name sent to `llm_b`; with LLM_B_BASE_URL it enables the provider.' },
  { key: 'llmBApiKey', env: 'LLM_B_API_KEY', fallback: undefined, parse: optionalText, doc: 'API key for `llm_b` (sent the way `@anthropic-ai/sdk` sends it; never logged).' },
  { key: 'userTokenLifetimeSeconds', env: 'USER_TOKEN_LIFETIME_SECONDS', fallback: 48 * 60 * 60, parse: integer(60, 30 * 24 * 60 * 60), doc: 'Lifetime of the user tokens `/v2/auth/generate_token` signs; a sync socket is closed with 4401 when its token expires.' },
  { key: 'stopDrainMs', env: 'STOP_DRAIN_MS', fallback: 10_000, parse: integer(0, 600_000), doc: 'On SIGTERM/SIGINT, how long REST requests in flight may run before the stop goes on without them (sockets are then closed with 1012).' },
  { key: 'natsUrl', env: 'NATS_URL', fallback: undefined, parse: natsUrl, doc: 'NATS server(s) with JetStream, e.g. `nats://127.0.0.1:4222` (comma-separated for several); set: this process joins a cluster (docs/cluster.md) and `SECRET_KEY` is required. Unset: one process, nothing external.' },
  { key: 'nodeId', env: 'NODE_ID', fallback: undefined, parse: optionalText, doc: 'This node\'s name in the cluster (leases and relay subjects name it); default: `HOST:PORT` (with `PORT=0`: host name and process id).' },
  { key: 'clusterLeaseMs', env: 'CLUSTER_LEASE_MS', fallback: 10_000, parse: integer(1000, 10_000), doc: 'How long a document\'s ownership lease lasts without renewal (renewed every third of it); a dead node\'s documents move within it.' },
  { key: 'clusterReplicas', env: 'CLUSTER_REPLICAS', fallback: 1, parse: integer(1, 5), doc: 'Replicas of the cluster\'s JetStream storage (the document-lease, worker-role and agent-version-counter KV buckets, the state stream `PLAIT_STATE`, the object stores `plait_blobs` and `plait_checkpoints`): 1 on a single NATS server (tests, dev), 3 on a production three-server NATS cluster.' },
  { key: 'clusterCheckpointBytes', env: 'CLUSTER_CHECKPOINT_BYTES', fallback: 256 * MiB, parse: integer(0, 1024 * 1024 * MiB), doc: 'Cluster mode: once the state log (the stream `PLAIT_STATE` and its blobs) has grown this much since the last checkpoint, the worker-role holder writes a checkpoint (object store `plait_checkpoints`) and purges the stream and blobs up to it (docs/cluster.md, "Compaction"); 0 never compacts.' },
  { key: 'awarenessMaxStateBytes', env: 'AWARENESS_MAX_STATE_BYTES', fallback: 16 * 1024, parse: integer(256, MiB), doc: 'Largest awareness state (as JSON) one client id may announce; larger entries are dropped (docs/limits.md).' },
  { key: 'awarenessUpdatesPerSecond', env: 'AWARENESS_UPDATES_PER_SECOND', fallback: 30, parse: integer(1, 10_000), doc: 'Awareness frames one sync connection may send per second (a burst of as many); the excess is dropped.' },
  { key: 'apiKeyAwarenessBytesPerSecond', env: 'API_KEY_AWARENESS_BYTES_PER_SECOND', fallback: 64 * MiB, parse: integer(0, 1024 * 1024 * MiB), doc: 'Awareness bytes one API key\'s connections may have sent out per second, over all its documents: each frame a connection announces counts its size times the connections of its document (awareness goes to every one of them), with bursts of 8 seconds\' worth; past it the frame is dropped like one past the rate (clients renew their state), so one workspace\'s cursors cannot take the event loop every other needs. 0 turns it off.' },
];

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function flagName(env: string): string {
  return `--${env.toLowerCase().replaceAll('_', '-')}`;
}

/** Reads `--name value`, `--name=value` and bare `--name` (true) / `--no-name` (false). */
function parseFlags(argv: readonly string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === undefined || !arg.startsWith('--')) throw new ConfigError(`unexpected argument "${arg ?? ''}"`);
    const eq = arg.indexOf('=');
    if (eq !== -1) {
      flags.set(arg.slice(0, eq), arg.slice(eq + 1));
      continue;
    }
    const next = argv[i + 1];
    if (next !== undefined && !next.startsWith('--')) {
      flags.set(arg, next);
      i++;
    } else if (arg.startsWith('--no-')) {
      flags.set(`--${arg.slice(5)}`, 'false');
    } else {
      flags.set(arg, 'true');
    }
  }
  return flags;
}

/** Builds the frozen config: flags win over env vars, env vars over defaults. Overrides are for tests and benches. */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  argv: readonly string[] = [],
  overrides: Partial<Config> = {},
): Config {
  const flags = parseFlags(argv);
  const known = new Set(OPTIONS.map((option) => flagName(option.env)));
  for (const flag of flags.keys()) {
    if (!known.has(flag)) throw new ConfigError(`unknown flag ${flag}; known flags: ${[...known].join(', ')}`);
  }
  const values: Record<string, unknown> = {};
  for (const option of OPTIONS) {
    const flag = flagName(option.env);
    const raw = flags.get(flag) ?? env[option.env];
    values[option.key] = raw === undefined ? option.fallback : option.parse(raw, raw === flags.get(flag) ? flag : option.env);
  }
  const config = { ...values, ...overrides } as unknown as Config;
  if (config.natsUrl !== undefined && config.secretKey === undefined) {
    // Every node must read the same secrets at rest and sign tokens with the same keys.
    throw new ConfigError('NATS_URL is set (cluster mode) but SECRET_KEY is not: set the same SECRET_KEY on every node');
  }
  return Object.freeze({ ...config, dataDir: resolve(config.dataDir) });
}

export function describeOptions(): ReadonlyArray<{ env: string; flag: string; fallback: string; doc: string }> {
  return OPTIONS.map((option) => ({ env: option.env, flag: flagName(option.env), fallback: option.shown ?? describeFallback(option.fallback), doc: option.doc }));
}

function describeFallback(fallback: unknown): string {
  if (Array.isArray(fallback)) return fallback.length === 0 ? 'undefined' : fallback.join(',');
  return String(fallback);
}
