// Owns what a document actor is given by its registry: the shared log, limits, budgets and ports every actor of the process uses.
import type { ByteBudget } from '../byte-budget.js';
import type { Config } from '../config.js';
import type { DocumentKey } from '../document-key.js';
import type { Logger } from '../log.js';
import type { UpdateLog } from '../store/update-log.js';
import type { AwarenessLimits } from './awareness-guard.js';
import { awarenessFanoutBudget } from './document-awareness.js';
import { backpressureCheckBytes } from './fanout.js';
import type { CrdtEvents } from './crdt-events.js';
import type { JoinFrames } from './join-state.js';
import { SyncCpuBudget } from './sync-cpu.js';
import type { ConnectionListener, TopicPublisher } from './peer.js';

/** One object for every actor of the registry (src/doc/registry.ts): a deps object per document cost ~0.5 KB each. */
export interface ActorDeps {
  readonly updateLog: UpdateLog;
  /** Shared by every actor; the actor adds its document to each line (a child logger per document costs memory). */
  readonly log: Logger;
  readonly mailboxCapacity: number;
  readonly awareness: AwarenessLimits;
  /** API_KEY_AWARENESS_BYTES_PER_SECOND, shared by every actor: awareness bytes times connections, per API key. */
  readonly awarenessFanout?: Pick<ByteBudget, 'charge'>;
  readonly maxConnections: number;
  /** Bytes published between two checks of every socket's buffer (backpressureCheckBytes in src/doc/fanout.ts). */
  readonly backpressureCheckBytes: number;
  /** Called when the actor has no connection and no lease: the registry may unload it after a delay. */
  readonly onIdle: (key: DocumentKey) => void;
  /** Shared with the registry, so listeners registered later are told too. */
  readonly listeners: readonly ConnectionListener[];
  /** Server-originated frames (awareness, broadcasts, REST updates) go to a topic's subscribers through it. */
  readonly publisher: TopicPublisher;
  /** The byte budget of the kept late-join frames (src/doc/join-state.ts); none kept when absent. */
  readonly joinFrames?: JoinFrames;
  /** MAX_DOCUMENT_BYTES (0: none): what `fits` holds the document's stored bytes to. */
  readonly maxDocumentBytes: number;
  /** API_KEY_SYNC_CPU_MS_PER_SECOND, shared by every actor: the event loop's time each key's frames took; absent when off. */
  readonly syncCpu?: SyncCpuBudget;
  /** The debounced `crdt.update_data` events of the stores (src/doc/crdt-events.ts); absent: none are raised. */
  readonly crdtEvents?: CrdtEvents;
}

/** The settings an actor's deps are made from. */
export type ActorConfig = Pick<
  Config,
  'mailboxCapacity' | 'maxDocumentBytes' | 'awarenessMaxStateBytes' | 'awarenessUpdatesPerSecond' | 'apiKeyAwarenessBytesPerSecond' | 'maxConnectionsPerDocument' | 'wsMaxBackpressureBytes' | 'apiKeySyncCpuMsPerSecond'
>;

/** The registry's one deps object: its shared parts, and the limits and budgets the settings make. */
export function makeActorDeps(config: ActorConfig, shared: Pick<ActorDeps, 'updateLog' | 'log' | 'onIdle' | 'listeners' | 'publisher' | 'joinFrames' | 'crdtEvents'>): ActorDeps {
  return {
    ...shared,
    mailboxCapacity: config.mailboxCapacity,
    awareness: config,
    awarenessFanout: awarenessFanoutBudget(config),
    maxConnections: config.maxConnectionsPerDocument,
    backpressureCheckBytes: backpressureCheckBytes(config.wsMaxBackpressureBytes),
    maxDocumentBytes: config.maxDocumentBytes,
    ...(config.apiKeySyncCpuMsPerSecond > 0 ? { syncCpu: new SyncCpuBudget(config.apiKeySyncCpuMsPerSecond) } : {}),
  };
}
