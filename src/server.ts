// Owns wiring: opens the store and services, mounts every operation and the sync endpoint on one uWS App, and stops them.
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { RequestGate } from './http/gate.js';
import { writeJson } from './edge/reply.js';
import { fallback, preflight, route, type ForwardedRequest, type PathHandlers, type RouteDeps } from './http/route.js';
import type { Operation } from './http/operation.js';
import { rateLimits } from './http/rate-limit.js';
import { ClientAddresses, rateLimitKey } from './http/client-address.js';
import { mountEmailLinks } from './http/email-links.js';
import { workspaceEmailOperations } from './http/routes/workspace-email.js';
import { authOperations, permissionOperations } from './http/routes/auth.js';
import { documentOperations } from './http/routes/documents.js';
import { folderOperations } from './http/routes/folders.js';
import { organizationOperations } from './http/routes/organizations.js';
import { userGroupOperations } from './http/routes/usergroups.js';
import { userOperations } from './http/routes/users.js';
import { commentOperations } from './http/routes/comments.js';
import { presenceOperations } from './http/routes/presence.js';
import { workspaceOperations } from './http/routes/workspace.js';
import { loadUwsChoice } from './http/uws.js';
import { buildOpenApi, plaitVersion } from './http/openapi.js';
import { mountMetrics, mountSite } from './http/site.js';
import { metricsScrape } from './metrics/scrape.js';
import type { QueueStats } from './metrics/registry.js';
import { folderDocumentsFrom } from './doc/annotations/listing.js';
import type { ClusterNode } from './cluster/node.js';
import { crdtOperations } from './http/routes/crdt.js';
import { syncBehavior } from './ws/behavior.js';
import { SocketTopics } from './ws/socket-topics.js';
import { backpressureCheckBytes } from './doc/fanout.js';
import { defaultConsoleDir, mountConsole } from './console/serve.js';
import { domainOperations } from './http/routes/domains.js';
import { legacyOperations } from './http/routes/legacy.js';
import { liveStateOperations } from './http/routes/livestate.js';
import { recordingOperations } from './http/routes/recordings.js';
import { migrationOperations } from './http/routes/migration.js';
import { userDataOperations } from './http/routes/user-data.js';
import { permissionProviderOperations } from './http/routes/permission-provider.js';
import { agentOperations } from './http/routes/agents.js';
import { agentRunOperations } from './http/routes/agent-runs.js';
import { agentAssistOperations } from './http/routes/agent-assist.js';
import { memoryOperations } from './http/routes/memory.js';
import { deliveryConfigOperations } from './http/routes/delivery-configs.js';
import { webhookEndpointOperations } from './http/routes/webhook-endpoints.js';
import { notificationOperations } from './http/routes/notifications.js';
import { activityOperations } from './http/routes/activities.js';
import { BackgroundWork } from './background-work.js';
import { boundPorts, clockOf, openServices, publicUrl, type ServerOptions, type Services } from './services.js';


export interface RunningServer {
  readonly port: number;
  readonly services: Services;
  /** Every operation path served, for the README check. */
  readonly paths: readonly string[];
  /** The registered operations (the OpenAPI document and the client are generated from them). */
  readonly operations: readonly Operation[];
  /** The port of the separate metrics listener (METRICS_PORT), when there is one. */
  readonly metricsPort: number | undefined;
  /** Cluster mode: this node's membership (leases, relay, the state log and its compaction); undefined on one process. */
  readonly cluster: ClusterNode | undefined;
  stop(): Promise<void>;
}


/** Every REST operation, area by area (one file per spec area under src/http/routes). */
export function allOperations(services: Services): Operation[] {
  return [
    ...workspaceOperations(services.workspaces, services.secrets, services.domains, {
      within: (tx, workspace) => services.accountMail.verificationIn(tx, { id: workspace.id, ownerEmail: workspace.ownerEmail, workspaceName: workspace.name }),
      committed: (workspace) => {
        services.ownerEmails.created(workspace.id);
        services.accountMail.wake();
      },
    }),
    ...workspaceEmailOperations({ ...services, consoleOrigins: () => [...services.config.consoleOrigins, new URL(publicUrl(services.config)).origin] }),
    ...domainOperations(services.domains),
    ...authOperations(services.userTokens),
    ...legacyOperations(services.workspaces, services.userTokens, services.collab),
    ...permissionOperations(services.directory),
    ...organizationOperations(services.directory),
    ...documentOperations(services.directory),
    ...folderOperations(services.directory),
    ...userGroupOperations(services.directory),
    ...userOperations(services.directory),
    ...commentOperations(services.collab, { store: services.store, folderDocuments: folderDocumentsFrom(services.directory.documents), scanCommitted: !services.store.replicated }),
    ...presenceOperations(services.collab),
    ...liveStateOperations(services.liveStates),
    ...recordingOperations(services.recordings),
    ...migrationOperations(services.migrations),
    ...userDataOperations(services.userData, services.jobs),
    ...permissionProviderOperations(services.permissionProvider),
    ...crdtOperations(services.documentActors),
    ...agentOperations(services.agents.definitions, services.agents.groups),
    ...agentRunOperations(services.agents),
    ...agentAssistOperations(services.agents),
    ...memoryOperations(services.agents.memory),
    ...deliveryConfigOperations(services.delivery),
    ...webhookEndpointOperations(services.delivery),
    ...notificationOperations(services.delivery),
    ...activityOperations(services.delivery),
  ];
}

export async function startServer(config: Config, log: Logger, options: ServerOptions = {}): Promise<RunningServer> {
  const { uws, build, version, skipped } = loadUwsChoice();
  log.info(`uWebSockets.js: ${build} ${version}`, { skipped });
  const app = uws.App();
  // Publishes to every sync socket on a topic: through uWS's app.publish (ws.publish would skip its own socket), or
  // one socket at a time for large frames and sockets with a queue (src/ws/socket-topics.ts).
  const local = new SocketTopics(app, backpressureCheckBytes(config.wsMaxBackpressureBytes));
  // Cluster mode (NATS_URL, docs/cluster.md): leases decide ownership and the owner's frames also go out on NATS.
  // Loaded only in cluster mode: nats and the cluster modules are ~1.5 MB of heap a single process never uses.
  const cluster = config.natsUrl === undefined ? undefined : await (await import('./cluster/node.js')).ClusterNode.start(config, log.child({ component: 'cluster' }), local, options.checkpointPaced);
  let services: Services;
  try {
    services = await openServices(config, log, cluster?.relay.clusterPublisher() ?? local, { ...options, ...(cluster === undefined ? {} : { ownership: cluster.ownership(), replication: cluster.state, workerRole: cluster.worker, agentVersions: cluster.agentVersions }) });
  } catch (error) {
    // A refused start (a DATA_DIR another node holds, the cluster log unreachable) leaves no NATS connection behind.
    await cluster?.stop();
    await cluster?.finish();
    throw error;
  }
  cluster?.serve(services.documentActors);
  cluster?.serveJobs(services.jobs);
  const deps: RouteDeps = {
    auth: {
      workspace: (id, token) => services.workspaces.authenticateWorkspace(id, token),
      apiKey: (key, token) => {
        const identity = services.workspaces.authenticateApiKey(key, token);
        services.ownerEmails.assertKeysActive(identity.workspaceId);
        return identity;
      },
    },
    log,
    maxBodyBytes: config.maxBodyBytes,
    corsOrigin: config.corsOrigin,
    limits: rateLimits(config, clockOf(options)),
    clientAddresses: new ClientAddresses(config.trustedProxies),
    gate: new RequestGate(services.clock),
    originPolicy: (apiKey, origin) => services.domains.policy(apiKey, origin),
    ...(cluster === undefined ? {} : { forward: (owner: string, request: ForwardedRequest) => cluster.rest.forward(owner, request) }),
    ...(cluster === undefined ? {} : { catchUp: () => cluster.state.catchUpFound() }),
  };
  // Cluster mode: the per-key and per-address rates hold over all nodes, not once per node (src/cluster/shared-limits.ts).
  const { client, emailSend, emailStatus, credential, bytes, syncMessages } = deps.limits;
  cluster?.shareLimits({ client: client.share(), emailSend: emailSend.share(), emailStatus: emailStatus.share(), credential: credential.share(), bytes: bytes.share(), syncMessages: syncMessages.share() }, options.usageIntervalMs);
  const knownPaths = new Set<string>();
  const operations = allOperations(services);
  // By path, the entry of a request another node forwarded here (cluster mode): the same serve step, no HTTP.
  const forwardedByPath = new Map<string, PathHandlers['forwarded']>();
  for (const op of operations) {
    const handlerFor = route(op, deps);
    for (const path of op.paths) {
      if (knownPaths.has(path)) throw new Error(`two operations claim ${path}`);
      knownPaths.add(path);
      const handlers = handlerFor(path);
      app.post(path, handlers.http);
      forwardedByPath.set(path, handlers.forwarded);
    }
  }
  const getJson = (body: () => unknown) => (res: Parameters<Parameters<typeof app.get>[1]>[0]) => {
    writeJson(res, { aborted: false, requestId: '', corsOrigin: config.corsOrigin }, 200, body());
  };
  app.get('/healthz', getJson(() => ({ status: 'ok' })));
  app.get('/.well-known/jwks.json', getJson(() => services.userTokens.jwks()));
  let stopping: Promise<void> | undefined;
  mountSite(app, {
    corsOrigin: config.corsOrigin,
    log,
    openApi: () => buildOpenApi(operations, { title: 'Plait', version: plaitVersion() }),
    notReady: () => (stopping === undefined ? services.store.problem() : 'the server is stopping'),
  });
  const metrics = metricsScrape({
    documents: () => services.documentActors.stats(),
    queues: () => queueStats(services),
    sockets: () => local.stats(),
    ...(cluster === undefined ? {} : { state: () => cluster.state.stats() }),
  });
  const metricsApp = config.metricsPort === undefined ? app : uws.App();
  mountMetrics(metricsApp, metrics, { corsOrigin: config.corsOrigin, log });
  // A key expired for want of owner verification opens no sync connection either (its user tokens outlive it).
  const activeKeys = {
    apiKeyRecord: (apiKey: string) => {
      const record = services.workspaces.apiKeyRecord(apiKey);
      services.ownerEmails.assertKeysActive(record.workspaceId);
      return record;
    },
  };
  app.ws(
    '/sync/*',
    syncBehavior({
      ...services,
      sockets: local,
      workspaces: activeKeys,
      access: services.directory.access,
      gate: deps.gate,
      bytes: deps.limits.bytes,
      messages: { tryTake: (apiKey) => deps.limits.syncMessages.tryTake(apiKey), perSecond: config.apiKeySyncMessagesPerSecond },
      providerAccess: (userId, key) => {
        // A disabled organization or document stays closed whatever the provider says (access model rows 2 and 3).
        const { organizations, documents } = services.directory;
        if (organizations.find(key.apiKey, key.organizationId)?.disabled === true || documents.find(key.apiKey, key.organizationId, key.documentId)?.disabled === true) {
          return Promise.resolve({ role: null });
        }
        return services.permissionProvider.documentAccess(userId, key);
      },
      ...(cluster === undefined ? {} : { relay: cluster.relay, catchUp: () => cluster.state.catchUpFound() }),
    }),
  );
  mountEmailLinks(app, {
    ...services,
    publicUrl: () => publicUrl(config),
    log: log.child({ component: 'email-links' }),
    limitClient: (res, req) => {
      const peer = Buffer.from(res.getRemoteAddressAsText()).toString();
      deps.limits.client.take(rateLimitKey(deps.clientAddresses.resolve(peer, req.getHeader('x-forwarded-for'))));
    },
  });
  mountConsole(app, defaultConsoleDir(), log);
  app.options('/*', preflight(deps));
  app.any('/*', fallback(knownPaths, deps));

  const listenSocket = await listen(app, config.host, config.port, '');
  const port = uws.us_socket_local_port(listenSocket);
  const metricsSocket =
    config.metricsPort === undefined ? undefined : await listen(metricsApp, config.host, config.metricsPort, 'metrics');
  cluster?.serveRest(forwardedByPath);
  boundPorts.set(config, port);
  // Every job kind is registered by now. The holder of the worker role (this process, unless a cluster node holds it
  // elsewhere) runs the dispatcher and the delivery queue and resumes jobs a crash interrupted (each is idempotent).
  const background = new BackgroundWork({ role: services.workerRole, delivery: services.delivery, jobs: services.jobs, runs: services.agents.runs, log: log.child({ component: 'background' }), autoDeliver: options.autoDeliver !== false, now: services.clock.now });
  background.start();
  // In a cluster, compete for the worker role only now that this node can do the work.
  await cluster?.worker.begin();
  const stop = async (): Promise<void> => {
    // Drain (docs/cluster.md): readiness is false from here on (`stopping`). No new connections; requests on open
    // connections are answered UNAVAILABLE from now on.
    uws.us_listen_socket_close(listenSocket);
    if (metricsSocket !== undefined) uws.us_listen_socket_close(metricsSocket);
    metrics.stop();
    // Requests in flight finish against an open store (their replies promise a commit); sync upgrades get 503 from now on.
    if (!(await deps.gate.close(config.stopDrainMs))) {
      log.warn('stopping with requests still in flight', { requests: deps.gate.size, waitedMs: config.stopDrainMs });
    }
    // Dispatching and sending stop (attempts in flight settle, recorded); jobs in flight finish against open documents
    // and store (one cut short by a crash resumes on the next holder). Only then does the worker role move on.
    await background.stop();
    await cluster?.worker.release();
    // What could still take a document here (in-flight REST, jobs) has finished: from now on documents only move away.
    cluster?.drain();
    await services.agents.close();
    await services.documentActors.shutdown();
    // The actors raised their stores' pending crdt.update_data events as they went: committed before the store closes.
    await services.crdtEvents.settled();
    services.crdtEvents.close();
    // After the final snapshots: stop relaying, release the leases so other nodes take the documents at once.
    await cluster?.stop();
    services.collab.close();
    // Attempts in flight settle (each within its own timeout) so their outcome is recorded before the store closes.
    await services.delivery.stop();
    // Cluster mode: the last writes acknowledged, the cache marked clean, then the NATS connection drained.
    await cluster?.finish();
    await services.store.close();
  };
  return {
    port,
    services,
    paths: [...knownPaths].sort(),
    operations,
    metricsPort: metricsSocket === undefined ? undefined : uws.us_socket_local_port(metricsSocket),
    cluster,
    stop: () => (stopping ??= stop()),
  };
}

/** The shared queues as /metrics shows them. */
function queueStats(services: Services): QueueStats {
  const outbox = services.outbox.backlog();
  return {
    delivery: services.delivery.occupancy(),
    outboxEvents: outbox.waiting + outbox.parked,
    outboxParked: outbox.parked,
    agents: services.agents.pool.occupancy(),
    jobs: services.jobs.occupancy(),
  };
}

function listen(app: TemplatedApp, host: string, port: number, what: string): Promise<us_listen_socket> {
  return new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (socket === false) reject(new Error(`could not listen${what === '' ? '' : ` (${what})`} on ${host}:${port}`));
      else resolve(socket);
    });
  });
}

