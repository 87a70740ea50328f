// Owns one node's membership in a cluster: the NATS connection, its leases as the core's DocumentOwnership, the relay.
import { hostname } from 'node:os';
import { connect, type NatsConnection } from 'nats';
import type { Config } from '../config.js';
import type { DocumentOwnership, Ownership } from '../doc/ownership.js';
import type { TopicPublisher } from '../doc/peer.js';
import type { DocumentActors } from '../doc/registry.js';
import { documentKeyString, type DocumentKey } from '../document-key.js';
import { unavailable } from '../errors.js';
import type { Logger } from '../log.js';
import type { SharedUsage } from '../token-buckets.js';
import type { Jobs } from '../tenant/jobs.js';
import { KvAgentVersions } from './agent-versions.js';
import { JobForwarder } from './job-forward.js';
import { Leases } from './leases.js';
import { Relay } from './relay.js';
import { RestForwarding, type ForwardedHandler } from './rest-forward.js';
import { ClusterState } from './state.js';
import { SharedLimits } from './shared-limits.js';
import { WorkerLease } from './worker-lease.js';

/** How long a graceful stop waits for the NATS connection to drain before closing it. */
const STOP_DRAIN_MS = 2_000;

export type ClusterConfig = Pick<Config, 'natsUrl' | 'nodeId' | 'host' | 'port' | 'clusterLeaseMs'> & Partial<Pick<Config, 'clusterReplicas' | 'clusterCheckpointBytes'>>;

/** NODE_ID, else HOST:PORT; with PORT=0 the port is not known yet, so the host name and process id. */
export function nodeIdOf(config: ClusterConfig): string {
  if (config.nodeId !== undefined) return config.nodeId;
  return config.port === 0 ? `${hostname()}-${process.pid}` : `${config.host}:${config.port}`;
}

export class ClusterNode {
  private constructor(
    readonly nodeId: string,
    private readonly nc: NatsConnection,
    readonly leases: Leases,
    readonly relay: Relay,
    readonly rest: RestForwarding,
    /** The worker role (once-only background work) and this node's liveness: the core's WorkerRole port. */
    readonly worker: WorkerLease,
    private readonly log: Logger,
    /** Durable state in JetStream: the store's Replication port, the applier and catch-up (src/cluster/state.ts). */
    readonly state: ClusterState,
    /** Agent version numbers handed out once across the cluster (src/cluster/agent-versions.ts). */
    readonly agentVersions: KvAgentVersions,
    /** Background jobs that need a document another node owns run there (src/cluster/job-forward.ts). */
    readonly jobs: JobForwarder,
  ) {}

  /** Set by `drain()`: no new document is claimed here, so the ones it serves can only move away. */
  private draining = false;
  private limits: SharedLimits | undefined;

  /** Connects to NATS (reconnecting by itself for ever), binds the lease bucket and starts the relay's inbox. */
  /** `checkpointPaced` (tests): runs between pieces of a checkpoint's upload. */
  static async start(config: ClusterConfig, log: Logger, local: TopicPublisher, checkpointPaced?: () => Promise<void>): Promise<ClusterNode> {
    if (config.natsUrl === undefined) throw new Error('ClusterNode.start needs NATS_URL');
    const nodeId = nodeIdOf(config);
    const nc = await connect({ servers: config.natsUrl.split(',').map((server) => server.trim()), name: `plait ${nodeId}`, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === 'disconnect' || status.type === 'reconnect' || status.type === 'error') log.warn(`nats ${status.type}`, { data: String(status.data) });
      }
    })();
    const replicas = config.clusterReplicas ?? 1;
    const leases = await Leases.open(nc, { nodeId, leaseMs: config.clusterLeaseMs, log, replicas });
    const worker = await WorkerLease.start(nc, { nodeId, leaseMs: config.clusterLeaseMs, replicas, log });
    const relay = new Relay({
      nc,
      nodeId,
      log,
      local,
      ownerOf: (key) => leases.owner(documentKeyString(key)),
      watchMs: Math.max(250, Math.floor(config.clusterLeaseMs / 3)),
    });
    const state = await ClusterState.open(nc, { nodeId, log, replicas, owns: (document) => leases.owns(document), checkpointBytes: config.clusterCheckpointBytes ?? 0, holder: () => worker.held(), ...(checkpointPaced === undefined ? {} : { checkpointPaced }) });
    log.info('joined the cluster', { nodeId, nats: config.natsUrl, leaseMs: config.clusterLeaseMs, replicas, origin: state.origin });
    const agentVersions = await KvAgentVersions.open(nc, { replicas, log });
    return new ClusterNode(nodeId, nc, leases, relay, new RestForwarding(nc, nodeId, log), worker, log, state, agentVersions, new JobForwarder(nc, nodeId, log));
  }

  /** The core's ownership port, backed by the leases (the lease key is the document key string). */
  ownership(): DocumentOwnership {
    const leases = this.leases;
    return {
      owns: (key: DocumentKey) => leases.owns(documentKeyString(key)),
      claim: async (key: DocumentKey): Promise<Ownership> => {
        // A draining node takes no new document: the caller is told to retry, and its retry lands on another node.
        if (this.draining) throw unavailable('this node is draining; retry shortly');
        let claim: Ownership;
        try {
          claim = await leases.claim(documentKeyString(key));
        } catch (error) {
          // NATS away (or timing out): nobody can tell who owns the document, so nothing may be served from it.
          this.log.warn('lease claim failed', { error: String(error) });
          throw unavailable('the cluster coordinator (NATS) is unreachable; retry shortly');
        }
        if (!claim.mine) return claim;
        // The claim on the state stream starts this holding's epoch (older owners' later writes are fenced off), and
        // every write the previous owner got into the stream is before it: apply up to there before the actor loads
        // the document from the local cache.
        const document = documentKeyString(key);
        try {
          await this.state.claimDocument(document, leases.takenRevision(document) ?? 0);
        } catch (error) {
          void leases.release(documentKeyString(key));
          throw error;
        }
        return claim;
      },
      release: (key: DocumentKey) => {
        this.state.releaseDocument(documentKeyString(key));
        void leases.release(documentKeyString(key));
      },
      onLost: (listener) =>
        leases.onLost((id) => {
          const [apiKey, organizationId, documentId] = JSON.parse(id) as [string, string, string];
          listener({ apiKey, organizationId, documentId });
        }),
    };
  }

  /** Starts serving remote connections of the documents this node owns. */
  serve(actors: DocumentActors): void {
    this.relay.serve(actors);
  }

  /** Jobs meeting a document owned elsewhere forward to its owner; jobs forwarded here run on this node's actors. */
  serveJobs(jobs: Jobs): void {
    jobs.forwardTo(this.jobs);
    this.jobs.serve(jobs);
  }


  /** The per-key limits hold over the cluster: each node's buckets also take what the others' took (shared-limits.ts). */
  shareLimits(limits: Readonly<Record<string, SharedUsage>>, intervalMs?: number): void {
    this.limits?.stop();
    this.limits = new SharedLimits(this.nc, this.nodeId, limits, this.log, intervalMs);
    this.limits.start();
  }

  /** Tells the other nodes now what this node's limits took since the last time; false when they took nothing. */
  tellLimits(): boolean {
    return this.limits?.tell() ?? false;
  }

  /** Starts answering REST requests forwarded to this node, each by its path's serve step (src/http/route.ts). */
  serveRest(byPath: ReadonlyMap<string, ForwardedHandler>): void {
    this.rest.serve(byPath);
  }

  /** First step of a graceful stop (SIGTERM): from now on this node claims no new document. */
  drain(): void {
    this.draining = true;
  }

  /** Graceful stop, after the documents were unloaded: stop relaying, release every lease (the connection stays for `finish`). */
  async stop(): Promise<void> {
    this.draining = true;
    this.limits?.stop();
    this.rest.stop();
    this.jobs.stop();
    await this.worker.close();
    await this.relay.close();
    await this.leases.close();
  }

  /** After the store's last write, before it closes: the state's last acknowledgements, a clean cache, then the drain. */
  async finish(): Promise<void> {
    await this.state.close();
    // drain() waits for the server; with NATS away it would wait for ever, so it gets a bound and then a close.
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), STOP_DRAIN_MS)));
    const drained = this.nc.drain().then(
      () => 'drained' as const,
      (error: unknown) => {
        this.log.warn('nats drain failed', { error: String(error) });
        return 'failed' as const;
      },
    );
    if ((await Promise.race([drained, bound])) !== 'drained') await this.nc.close();
    clearTimeout(timer);
  }
}
