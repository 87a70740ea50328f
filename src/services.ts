// Owns opening the services: the store, tenants, documents, delivery, agents and jobs, wired to each other (no edge).
import { Secrets } from './auth/secrets.js';
import { systemClock, type Clock } from './clock.js';
import { UserTokens } from './auth/user-tokens.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { parseSender, type EmailTransport } from './delivery/outbound/email.js';
import { AccountMail } from './tenant/account-mail.js';
import { OwnerEmails } from './tenant/owner-email.js';
import { Store } from './store/env.js';
import type { Replication } from './store/replication.js';
import { invalidateOnReplicatedChange } from './replicated-caches.js';
import { CollabDocuments } from './doc/collab-state.js';
import { CrdtEvents } from './doc/crdt-events.js';
import { DocumentActors } from './doc/registry.js';
import type { TopicPublisher } from './doc/peer.js';
import { Outbox } from './events/outbox.js';
import { encodeLiveMessage, encodeLiveStateMessage } from './ws/live-messages.js';
import { Directory, LmdbDocumentData } from './tenant/directory.js';
import { Domains } from './tenant/domains.js';
import { LiveStates } from './doc/live-state.js';
import { Recordings } from './doc/recordings.js';
import { DocumentMigrations } from './doc/migration.js';
import { Jobs } from './tenant/jobs.js';
import { commentSource, presenceSource, UserData } from './doc/user-data.js';
import { PermissionProvider } from './tenant/permission-provider.js';
import { OutboundHttp } from './delivery/outbound/http.js';
import { DOCUMENT_DATABASES } from './tenant/directory/data-owners.js';
import { personalDataCursor, type PersonalDataCursor } from './tenant/directory/users.js';
import { buildThreadIds, buildThreadTimes } from './doc/annotations/time-index.js';
import { openAgents, type AgentServices } from './agents/services.js';
import { Workspaces } from './tenant/workspaces.js';
import { Delivery } from './delivery/service.js';
import { DEFAULT_POLL_MS } from './delivery/dispatcher.js';
import { DEFAULT_MAX_IDLE_MS } from './delivery/runner.js';
import { WORK_SCAN_MS } from './background-work.js';
import { deliveryUserData } from './delivery/user-data.js';
import type { DocumentOwnership } from './doc/ownership.js';
import { LocalWorkerRole, type WorkerRole } from './worker-role.js';
import type { AgentVersionCounter } from './agents/version-counter.js';

export interface Services {
  readonly config: Config;
  readonly log: Logger;
  /** Time for token expiry, grant expiry, presence and the stop's drain timeout (tests pass a clock they advance). */
  readonly clock: Clock;
  readonly store: Store;
  readonly secrets: Secrets;
  readonly workspaces: Workspaces;
  readonly userTokens: UserTokens;
  /** Organizations, folders, documents, users, groups, permissions; `directory.access` is the AccessResolver. */
  readonly directory: Directory;
  readonly outbox: Outbox;
  /** Comment annotations and presence per document. */
  readonly collab: CollabDocuments;
  /** Document actors (Yjs stores, awareness, sync connections); they also host `collab`. */
  readonly documentActors: DocumentActors;
  /** The stores' debounced `crdt.update_data` events: settled and closed after the actors, before the store. */
  readonly crdtEvents: CrdtEvents;
  /** Each API key's allowed web origins, checked at the sync upgrade and on cross-origin REST requests. */
  readonly domains: Domains;
  /** Named live values per document (livestate/broadcast), sent to extension-frame connections. */
  readonly liveStates: LiveStates;
  /** Recorder annotations with their attachments' metadata. */
  readonly recordings: Recordings;
  /** Durable background jobs (document migration, GDPR erase); unfinished ones resume at start. */
  readonly jobs: Jobs;
  readonly migrations: DocumentMigrations;
  /** GDPR export and erase of one user across every feature. */
  readonly userData: UserData;
  /** Asked over outbound HTTP when stored grants give a user no access to a document. */
  readonly permissionProvider: PermissionProvider;
  /** Owner email verification, one-time email links, key expiry while unverified. */
  readonly ownerEmails: OwnerEmails;
  /** Verification and sign-in emails: requests committed as delivery jobs, sent after the reply. */
  readonly accountMail: AccountMail;
  /** Agent definitions, groups, runs and Memory (src/agents/). */
  readonly agents: AgentServices;
  /** Outbox dispatcher, delivery queue and channels, delivery configs, notifications, activity logs (src/delivery). */
  readonly delivery: Delivery;
  /** Whether this process runs the shared background work now (one process: always; a cluster: one node). */
  readonly workerRole: WorkerRole;
}

/** Test seams: a manual clock, the account-email transport. */
export interface ServerOptions {
  /**
   * The clock of rate limits, email links, key, token and grant expiry, presence, agent runs and the stop's drain
   * (default: the system clock). One that only tells the time (`now`) gets the system's timers.
   */
  readonly clock?: Pick<Clock, 'now'> & Partial<Pick<Clock, 'setTimer'>>;
  /** Where account emails go (default: the transport configured by SMTP_URL, else the dev log transport). */
  readonly emailTransport?: EmailTransport;
  /** false: delivery runs only when a test pumps it (`services.delivery.dispatcher.drain()`, `runner.drain()`). */
  readonly autoDeliver?: boolean;
  /** How often an idle dispatcher looks at the outbox; default: WORK_SCAN_MS where wake-ups follow the rows, else 100 ms. */
  readonly dispatcherPollMs?: number;
  /** Cluster mode: who owns each document (src/cluster/ leases); default: this process owns everything. */
  readonly ownership?: DocumentOwnership;
  /** Cluster mode: durable state in JetStream (src/cluster/state.ts); attached, and caught up, before any service opens. */
  readonly replication?: Replication & { attach(store: Store): Promise<void>; catchUpFound(): Promise<boolean> };
  /** Cluster mode: which node runs the outbox, the delivery queue and jobs (src/cluster/ worker lease); default: this one. */
  readonly workerRole?: WorkerRole;
  /** Cluster mode, tests: runs between pieces of a state checkpoint's upload (a test stops a checkpoint half-way). */
  readonly checkpointPaced?: () => Promise<void>;
  /** Cluster mode: agent version numbers from a counter every node shares (src/cluster/agent-versions.ts); default: the store's. */
  readonly agentVersions?: AgentVersionCounter;
  /** Cluster mode, tests: how often this node tells the others its limits' usage (default USAGE_INTERVAL_MS, 250 ms). */
  readonly usageIntervalMs?: number;
}

/** `publisher` sends server-originated frames to a topic's sockets: the App's publish once the App exists. */
export async function openServices(config: Config, log: Logger, publisher: TopicPublisher, options: ServerOptions = {}): Promise<Services> {
  const clock = serverClock(options);
  const now = clock.now;
  const workerRole = options.workerRole ?? new LocalWorkerRole();
  const store = Store.open(config.dataDir, { log: log.child({ component: 'store' }), deferMs: config.groupCommitMs, ...(options.replication === undefined ? {} : { replication: options.replication }) });
  await options.replication?.attach(store);
  const secrets = Secrets.load(config.dataDir, config.secretKey);
  const workspaces = new Workspaces(store, secrets);
  const userTokens = await UserTokens.open(store, secrets, {
    now: clock.now,
    lifetimeSeconds: config.userTokenLifetimeSeconds,
    ...(options.replication === undefined ? {} : { catchUp: options.replication.catchUpFound.bind(options.replication) }),
  });
  const directory = new Directory(store, {
    now: clock.now,
    defaultAccessType: (apiKey) => workspaces.apiKeyRecord(apiKey).config.defaultDocumentAccessType,
    // Until the sync and comment owners register (directory.addDataOwner), document data is removed by LMDB range.
    dataOwners: [new LmdbDocumentData(store)],
  });
  const outbox = new Outbox(store, options.workerRole === undefined ? {} : { node: workerRole.processId });
  outbox.onCommitted(() => workerRole.wake('outbox'));
  // Debounced by the stores' own change times (Date.now, as `EditorDoc.touch` stamps them), not the delivery clock.
  const crdtEvents = new CrdtEvents({ store, outbox, now: Date.now, log: log.child({ component: 'crdt-events' }) });
  const documentActors = new DocumentActors(config, store, log.child({ component: 'documents' }), publisher, options.ownership, crdtEvents);
  directory.addDataOwner(documentActors);
  const collab = new CollabDocuments({
    store,
    outbox,
    now: clock.now,
    offlineTtlMs: config.presenceOfflineTtlMs,
    maxCommentThreadBytes: config.maxCommentThreadBytes,
    maxPresenceUsers: config.maxPresenceUsersPerDocument,
    actors: documentActors,
    encode: encodeLiveMessage,
    log,
  });
  documentActors.onConnection(collab.connectionListener());
  // After the registry: its eviction drains the actor, whose departing connections write presence.
  directory.addDataOwner(collab);
  // The threads of a directory older than their indexes get their index rows before anything lists them.
  await buildThreadTimes(store);
  await buildThreadIds(store);
  const domains = new Domains(store);
  const jobs = new Jobs(store, log.child({ component: 'jobs' }), Date.now, workerRole, config.maxPendingJobsPerKey);
  const recordings = new Recordings(store, Date.now, outbox);
  const permissionProvider = new PermissionProvider({
    store,
    secrets,
    http: new OutboundHttp({ allowedNetworks: config.outboundAllowedNetworks }),
    log: log.child({ component: 'permission-provider' }),
  });
  const userData = new UserData(jobs);
  userData.addSource({
    feature: 'directory',
    // Cursors are [apiKey, organizationId] or, inside an organization whose grants fill pages, [apiKey, organizationId,
    // level, resourceId]: every export cursor starts with the API key (src/doc/user-data.ts).
    collect: async (apiKey, userId, after, limit) => {
      const page = await directory.users.personalData(apiKey, userId, { limit, ...(after === undefined ? {} : { after: personalDataCursor(after) }) });
      if (page.next === undefined) return { items: page.items };
      const { organizationId, grant } = page.next;
      return { items: page.items, next: grant === undefined ? [apiKey, organizationId] : [apiKey, organizationId, grant.level, grant.resourceId] };
    },
    erase: async (apiKey, userId) => {
      // Each organization once, though its grants may span pages.
      const erased = new Set<string>();
      let after: PersonalDataCursor | undefined;
      do {
        const page = await directory.users.personalData(apiKey, userId, { limit: 100, ...(after === undefined ? {} : { after }) });
        for (const { organizationId } of page.items) {
          if (erased.has(organizationId)) continue;
          await directory.users.delete(apiKey, { organizationId }, [userId]);
          erased.add(organizationId);
        }
        after = page.next;
      } while (after !== undefined);
      return erased.size;
    },
  });
  userData.addSource(commentSource(store, collab));
  userData.addSource(presenceSource(store, collab));
  userData.addSource({
    feature: 'recordings',
    collect: (apiKey, userId, after, limit) => recordings.byUser(apiKey, userId, after, limit),
    erase: (apiKey, userId) => recordings.anonymize(apiKey, userId),
  });
  const migrations = new DocumentMigrations({
    store,
    documents: documentActors,
    directory: {
      knows: (apiKey, organizationId, documentId) => directory.documents.find(apiKey, organizationId, documentId) !== undefined,
      rekey: (apiKey, organizationId, documentId, newDocumentId) => directory.documents.rekey(apiKey, organizationId, documentId, newDocumentId),
    },
    jobs,
    databases: DOCUMENT_DATABASES,
    holdPartMovedAtStart: options.ownership === undefined,
  });
  const liveStates = new LiveStates({ store, actors: documentActors, encode: encodeLiveStateMessage, now: Date.now, log });
  documentActors.onConnection(liveStates.connectionListener());
  const ownerEmails = new OwnerEmails(store, secrets, workspaces, {
    graceMs: config.emailVerificationGraceMs,
    verificationLinkTtlMs: config.verificationLinkTtlMs,
    loginLinkTtlMs: config.loginLinkTtlMs,
    now,
  });
  const agents = await openAgents({ store, secrets, config, collab, log, now, processId: workerRole.processId, ...(options.agentVersions === undefined ? {} : { versions: options.agentVersions }) });
  const sender = parseSender(config.emailFrom);
  const delivery = new Delivery({
    config,
    store,
    outbox,
    secrets,
    log,
    mayRun: () => workerRole.held(),
    // Every commit that appends events wakes the dispatcher (`Outbox.committed` -> `workerRole.wake`), and every enqueue
    // the runner (`DeliveryQueue.notify`). Where those wake-ups follow the rows (one process) the polls are only
    // backstops, as slow as the background scan: an idle server wakes for them every 5 s instead of 11 times a second
    // (bench/README.md, "Fixed costs, sixth session"). A cluster node keeps the short ones (docs/delivery.md).
    dispatcherPollMs: options.dispatcherPollMs ?? (workerRole.wakesFollowRows ? WORK_SCAN_MS : DEFAULT_POLL_MS),
    runnerIdleMs: workerRole.wakesFollowRows ? WORK_SCAN_MS : DEFAULT_MAX_IDLE_MS,
    // Account emails go out through the server's transport (SMTP_URL), or `options.emailTransport` (tests); workspace
    // emails through the server's or the workspace's own (SendGrid).
    account: {
      from: sender.address,
      ...(sender.name === undefined ? {} : { fromName: sender.name }),
      publicUrl: () => publicUrl(config),
      ownerEmails,
      workspaces,
      log: log.child({ component: 'account-mail' }),
      verificationLinkTtlMs: config.verificationLinkTtlMs,
      loginLinkTtlMs: config.loginLinkTtlMs,
      ...(options.emailTransport === undefined ? {} : { transport: options.emailTransport }),
    },
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  // Before anything reads a page: logs and notifications of a schema-3 directory get their time index (once).
  await delivery.buildIndexes();
  const accountMail = new AccountMail(store, delivery.account);
  for (const source of deliveryUserData(store, delivery.notifications, delivery.activities)) userData.addSource(source);
  // Last: the actors are drained by then, so the events of their last writes are in the outbox to be dropped.
  directory.addDataOwner(delivery.documentData);
  if (options.replication !== undefined) invalidateOnReplicatedChange(store, { workspaces, userTokens, domains, permissionProvider, ownerEmails, deliveryConfigs: delivery.configs }, log);
  return { config, log, clock, store, secrets, workspaces, userTokens, directory, outbox, collab, documentActors, crdtEvents, domains, liveStates, recordings, jobs, migrations, userData, permissionProvider, ownerEmails, accountMail, agents, delivery, workerRole };
}

export function clockOf(options: ServerOptions): () => number {
  return serverClock(options).now;
}

/** The options' clock as a whole Clock: the system clock, or the given one (with the system's timers if it has none). */
function serverClock(options: ServerOptions): Clock {
  const given = options.clock;
  if (given === undefined) return systemClock;
  return { now: () => given.now(), setTimer: given.setTimer === undefined ? systemClock.setTimer : given.setTimer.bind(given) };
}

/** PUBLIC_URL, else the address the server listens on (the port is the bound one once listening). */
export function publicUrl(config: Config): string {
  if (config.publicUrl !== undefined) return config.publicUrl;
  const host = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${boundPorts.get(config) ?? config.port}`;
}

/** The port each running config is bound to (port 0 picks one at listen). */
export const boundPorts = new WeakMap<Config, number>();
