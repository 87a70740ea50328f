// Owns the LMDB key layout: every named database and the shape of its keys, in one place (docs/storage.md mirrors it).
import type { Database, Key } from 'lmdb';

/**
 * Named databases. Keys are lmdb-js ordered-binary arrays, so a key prefix is a range scan.
 * Values are msgpackr records unless marked binary, or JSON in the JSON_ROWS databases below.
 */
export const DB = {
  /** 'schemaVersion' -> number; 'devBootstrapDone' -> true. */
  meta: 'meta',
  /** [workspaceId] -> WorkspaceRecord */
  workspaces: 'workspaces',
  /** [ownerEmailLowercase] -> workspaceId */
  workspaceByEmail: 'workspace-by-email',
  /** [workspaceId] -> OwnerEmailRecord (verified when, exempt, the current one-time link of each purpose) */
  ownerEmail: 'owner-email',
  /** [keyedHash(linkToken)] -> EmailLinkRecord (purpose, workspace, expiry); removed when redeemed or replaced */
  emailLinks: 'email-links',
  /** [apiKey] -> ApiKeyRecord (auth tokens kept encrypted, indexed by keyed hash below) */
  apiKeys: 'api-keys',
  /** [keyedHash(authToken)] -> apiKey */
  authTokenIndex: 'auth-token-index',
  /** [kid] -> SigningKeyRecord (user-token signing keys; private part encrypted) */
  signingKeys: 'signing-keys',
  /** [apiKey, kind, ...ids] -> directory records (organizations, folders, documents, users, groups, grants) */
  directory: 'directory',
  /** binary. [apiKey, organizationId, documentId, editorId, seq] -> one Yjs update, or a batch of a commit's appends to the store at the last one's seq (src/store/log-rows.ts) */
  docUpdates: 'doc-updates',
  /** binary. [apiKey, organizationId, documentId, editorId] -> Yjs state snapshot (encodeStateAsUpdate) */
  docSnapshots: 'doc-snapshots',
  /**
   * [apiKey, organizationId, documentId, editorId] -> StoreMeta (type, contentKey, lastUpdate, lastUpdatedBy, sessionId,
   * nextSeq) of one editor doc. Named 'doc-stores' on disk: renaming a named database would need a migration.
   */
  editorDocMeta: 'doc-stores',
  /**
   * [apiKey, organizationId, documentId, annotationNumber] -> AnnotationRecord (new threads append to the document's
   * range); rows of schema 1 and 2 under [apiKey, organizationId, documentId, annotationId] until their next change
   */
  annotations: 'annotations',
  /**
   * [apiKey, organizationId, lastUpdated, documentId, annotationId] -> ThreadSummary: the organization's threads in
   * listing order, one row per thread written and removed with it (src/store/thread-times.ts)
   */
  annotationTimes: 'annotation-times',
  /**
   * [apiKey, organizationId, annotationId, documentId] -> the thread row's last key element (its number, or its id for a
   * row of schema 1 or 2): the organization's threads by id, written and removed with them (src/store/thread-times.ts)
   */
  annotationIds: 'annotation-ids',
  /** [apiKey, organizationId, documentId, userId] -> PresenceRecord */
  presence: 'presence',
  /** [apiKey, organizationId, documentId, liveStateDataId] -> { data, updatedAt } (livestate/broadcast) */
  liveState: 'live-state',
  /** [apiKey, organizationId, documentId, annotationId] -> Recording (recorder annotations; attachment URLs, not bytes) */
  recordings: 'recordings',
  /** [apiKey] -> permission provider config (URL, sealed auth token, enabled) */
  permissionProvider: 'permission-provider',
  /**
   * [apiKey, jobId] -> JobRecord (document migrations, GDPR erasures): status kept, unfinished ones resumed at start;
   * [0, jobId] -> apiKey while the job is pending or in progress (the worker's index, src/tenant/jobs.ts);
   * [1, apiKey, jobId] -> true beside it (a key's unfinished jobs, counted against MAX_PENDING_JOBS_PER_KEY)
   */
  jobs: 'jobs',
  /** [apiKey] -> string[]: the API key's allowed web origins (normalised domains) */
  domains: 'domains',
  /** seq (a bare number: lmdb-js reads a one-element array key back as its element) -> OutboxEvent, written in the same transaction as its change */
  outbox: 'outbox',
  /**
   * [apiKey, seq] (or [apiKey, seq, node] in a cluster) -> the same row as DB.outbox: an API key's events parked in its
   * lane when its planning outran its share of a dispatcher round (src/events/outbox-lanes.ts)
   */
  outboxLanes: 'outbox-lanes',
  /** [apiKey, agentId] -> AgentRecord (custom agents; src/agents/definitions.ts) */
  agents: 'agents',
  /** [apiKey, agentId, version] -> VersionRecord (behaviour with secrets sealed) */
  agentVersions: 'agent-versions',
  /** [apiKey, groupId] -> AgentGroup */
  agentGroups: 'agent-groups',
  /** [apiKey, agentId] -> AgentStats (execution count, last run, tokens) */
  agentStats: 'agent-stats',
  /**
   * [apiKey, createdAt, executionId] -> ExecutionRecord (lists by time); [apiKey, '#', executionId] -> createdAt (the
   * lookup by id); [0, executionId] -> [apiKey, createdAt] while running (recovery's index); [apiKey, '%', agentId,
   * status, createdAt, executionId] -> null (the count's status keys); src/agents/runs.ts
   */
  agentExecutions: 'agent-executions',
  /**
   * [apiKey, agentId, decidedAt, annotationId] -> Decision (Memory: suggestion accept/reject per agent);
   * [apiKey, '#decided', agentId, annotationId] -> boolean (the last verdict, so a repeat is recorded once)
   */
  memoryDecisions: 'memory-decisions',
  /**
   * [apiKey, createdAt, alertId] -> Alert (lists newest first); [apiKey, '#id', alertId] -> createdAt;
   * [apiKey, '#dedup', dedupKey] -> alertId; [apiKey, '#drift', agentId] -> DriftState (src/agents/memory/memory.ts)
   */
  memoryAlerts: 'memory-alerts',
  /** [apiKey] -> AlertConfig */
  memoryConfig: 'memory-config',
  /** [apiKey, kind] -> delivery config (email, activity, webhook, notification, advancedWebhook); src/tenant/delivery-config-store.ts */
  deliveryConfigs: 'delivery-configs',
  /** [jobId] -> DeliveryJob (the durable timer queue's rows); src/delivery/queue.ts */
  deliveryJobs: 'delivery-jobs',
  /** [dueMs, jobId] -> target: the timer queue's index up to schema 4, moved into the two below once at start */
  deliveryDue: 'delivery-due',
  /** [target, dueMs, jobId] -> null, for every pending job: the timer queue's index (src/delivery/due-index.ts) */
  deliveryTargetDue: 'delivery-target-due',
  /** [dueMs, target] -> apiKey: each target's earliest pending job, so a scan reads a row per target */
  deliveryHeads: 'delivery-heads',
  /** [updatedAt, jobId] -> null, for every finished job: pruning's index */
  deliveryFinished: 'delivery-finished',
  /** [target] -> ms of the success last written: targets that have had a successful attempt; src/delivery/proven-targets.ts */
  deliveryProven: 'delivery-proven',
  /** [apiKey, endpointId] -> EndpointRecord (advanced webhook endpoints, secret sealed) */
  webhookEndpoints: 'webhook-endpoints',
  /**
   * [apiKey, endpointId, messageId] -> MessageRecord with its attempts, its body in DB.webhookBodies (Plait extension:
   * messages/attempts/resend); from schema 9 written at the first settled attempt, a planned message being its time-index row alone
   */
  webhookMessages: 'webhook-messages',
  /** [apiKey, endpointId, createdAt, messageId] -> {status}: the message log's time index; src/delivery/time-index.ts */
  webhookMessageTimes: 'webhook-message-times',
  /**
   * [apiKey, messageId] -> {body (JSON text), createdAt, eventType, eventId}, once for every endpoint the message went to
   * (schema 7 wrote the body text alone); src/delivery/message-bodies.ts
   */
  webhookBodies: 'webhook-bodies',
  /** [createdAt, apiKey, messageId] -> null: the bodies by time, for pruning */
  webhookBodyTimes: 'webhook-body-times',
  /** [apiKey, organizationId, notificationId] -> NotificationRecord */
  notifications: 'notifications',
  /** [apiKey, organizationId, timestamp, notificationId] -> what notification reads filter on; src/delivery/time-index.ts */
  notificationTimes: 'notification-times',
  /** [apiKey, organizationId, userId, documentId or ''] -> per-user notification channel preferences */
  notificationPrefs: 'notification-prefs',
  /** [apiKey, organizationId, activityId] -> ActivityRecord */
  activities: 'activities',
  /** [apiKey, organizationId, timestamp, activityId] -> what activity reads filter on; src/delivery/time-index.ts */
  activityTimes: 'activity-times',
} as const;

export type DbName = (typeof DB)[keyof typeof DB];

/**
 * Record databases written as JSON behind a marker byte instead of msgpack (src/store/record-codec.ts; schema 11):
 * records built as the views the API answers, mostly strings. Their rows of schema 10 and older still read. Their
 * time indexes stay msgpack: a filtered page decodes thousands of those small rows, which msgpack reads faster.
 */
export const JSON_ROWS: ReadonlySet<DbName> = new Set<DbName>([DB.activities, DB.notifications]);

/**
 * Upper bound for a key prefix: ordered-binary sorts the single byte 0xff above every string and number, so
 * `{ start: prefix, end: [...prefix, KEY_END] }` is the range of every longer key starting with prefix.
 */
export const KEY_END = new Uint8Array([0xff]);

/**
 * The distinct string values of the key element right after `prefix`, in key order, one key read per value (a
 * skip-scan: after each value the next read starts past all its keys). Stops at the first non-string element.
 * `from`: start at this value (`''` skips the keys whose element there is a number, which sort before strings).
 */
export function distinctAfter(db: Pick<Database<unknown, Key>, 'getKeys'>, prefix: readonly Key[], from?: string): string[] {
  const found: string[] = [];
  const end: Key = [...prefix, KEY_END];
  let start: Key = from === undefined ? [...prefix] : [...prefix, from];
  for (;;) {
    let value: unknown;
    for (const key of db.getKeys({ start, end, limit: 1 })) value = Array.isArray(key) ? key[prefix.length] : undefined;
    if (typeof value !== 'string') return found;
    found.push(value);
    start = [...prefix, value, KEY_END];
  }
}

/**
 * Bumped when a stored shape changes incompatibly; checked at start. 2: msgpack records are written as plain maps
 * (docs/storage.md, "Encoding"), which builds stamped 1 read back as `Map`s, so they must refuse such a directory.
 * 3: comment threads are keyed by annotation number; a build stamped 2 would write a changed thread under its id
 * beside the numbered row, so it must refuse such a directory.
 * 4: activity logs, notifications and webhook messages have a time index beside them, finished delivery jobs an
 * index by finishing time, agent runs a status key; a build stamped 3 would write rows without their index rows, so
 * it must refuse such a directory.
 * 5: pending delivery jobs are indexed by target (`delivery-target-due`, `delivery-heads`) instead of by time alone; a
 * build stamped 4 would enqueue jobs the runner of this build never sees, so it must refuse such a directory.
 * 6: the dispatcher parks an API key's events in its lane (`outbox-lanes`); a build stamped 5 never reads the lanes, so
 * their events would never be planned, and it must refuse such a directory.
 * 7: an advanced webhook message's body is stored once (`webhook-bodies`) for all its endpoints' records, which no
 * longer hold it; a build stamped 6 would send and list those messages with no body, so it must refuse such a directory.
 * 8: every comment thread has a row in the time index (`annotation-times`) that the organization-wide listing reads; a
 * build stamped 7 would change threads without moving their index rows, so it must refuse such a directory.
 * 9: a planned advanced webhook message has no record until its first attempt settles (its time-index row and the
 * message's shared row stand for it); a build stamped 8 would cancel its job ("the endpoint was deleted") and list
 * nothing for it, so it must refuse such a directory.
 * 10: every comment thread has a row in the index by annotation id (`annotation-ids`) that the organization-wide
 * listing of requested ids reads; a build stamped 9 would add and remove threads without their id rows, so it must
 * refuse such a directory.
 * 11: activity-log and notification records are written as JSON (JSON_ROWS); a build stamped 10
 * would fail to decode them, so it must refuse such a directory.
 */
export const SCHEMA_VERSION = 11;

/**
 * Older stamps this build reads as they are (and re-stamps): version 1's inline records still decode, and threads
 * keyed by annotation id (1 and 2) are read and move to their number with their next change, and the activity logs,
 * notifications and webhook messages of 1 to 3 are indexed by time once at start (src/delivery/time-index.ts), and
 * the pending delivery jobs of 1 to 4 by target (DeliveryQueue.buildTargetIndex); 1 to 5 have no lanes, and none is
 * needed; the webhook messages of 1 to 6 hold their bodies and are read as they are; the threads of 1 to 7 are indexed by time
 * once at start (src/doc/annotations/time-index.ts); every webhook message of 1 to 8 has its record; the threads of 1 to 9 are indexed by id
 * once at start (src/doc/annotations/time-index.ts); the msgpack rows of 1 to 10 in JSON_ROWS databases still decode.
 */
export const READABLE_SCHEMA_VERSIONS: readonly number[] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
