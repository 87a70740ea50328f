// Owns relaying between nodes: sync sockets on a node that does not own their document reach the owner's actor over NATS.
import { ErrorCode, type Msg, type NatsConnection, type Subscription } from 'nats';
import type { RootHint } from '../doc/actor.js';
import { connectionTopics } from '../doc/fanout.js';
import type { Peer, TopicPublisher } from '../doc/peer.js';
import type { ConnectionLease, ConnectionTarget, DocumentRelay } from '../doc/relay-port.js';
import type { DocumentActors } from '../doc/registry.js';
import type { DocumentKey } from '../document-key.js';
import { CLOSE, toAppError, unavailable } from '../errors.js';
import type { Logger } from '../log.js';
import { leaseKey } from './leases.js';
import { hdrs, RemoteSession, type AttachRequest } from './remote-peer.js';

/**
 * Subjects, spelled here and nowhere else (tokens are base64url, so any id is subject-safe):
 * - `plait.node.<node>.attach`: request/reply, a relaying node asks the owner to attach a remote connection;
 * - `plait.node.<node>.in`: frames (and the detach) of remote connections, to the owner;
 * - `plait.node.<node>.out`: what the owner's actor does to a remote connection (send, subscribe, close);
 * - `plait.node.<node>.ping`: request/reply, an owner asks whether a relaying node is still there;
 * - `plait.topic.<topic>`: the owner's fan-out of one uWS topic, heard by nodes with sockets subscribed to it.
 */
export const subjects = {
  attach: (node: string): string => `plait.node.${leaseKey(node)}.attach`,
  ping: (node: string): string => `plait.node.${leaseKey(node)}.ping`,
  in: (node: string): string => `plait.node.${leaseKey(node)}.in`,
  out: (node: string): string => `plait.node.${leaseKey(node)}.out`,
  topic: (topic: string): string => `plait.topic.${leaseKey(topic)}`,
} as const;

/** Frames a relayed connection may send before its attach request is out; past it, the edge sheds it (1013). */
const MAX_WAITING_FRAMES = 256;

/** How long a relaying node waits for the owner to attach a connection before refusing it (UNAVAILABLE). */
const ATTACH_TIMEOUT_MS = 5_000;


/** `work`, or a rejection with `message` once `ms` have passed (NATS away: a flush would wait for the reconnect). */
async function within<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

type AttachReply = { readonly ok: true } | { readonly ok: false; readonly status: string; readonly message: string };

const json = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
const parse = <T>(bytes: Uint8Array): T => JSON.parse(new TextDecoder().decode(bytes)) as T;


export interface RelayDeps {
  readonly nc: NatsConnection;
  readonly nodeId: string;
  readonly log: Logger;
  /** This node's own sockets only (uWS app.publish): what arrives from NATS is delivered here and not sent back. */
  readonly local: TopicPublisher;
  /** Who owns a document now (the leases), for the watchdog that closes sockets relayed to an owner that is gone. */
  readonly ownerOf?: (key: DocumentKey) => Promise<string | undefined>;
  /** How often the watchdog looks (a third of the lease time). */
  readonly watchMs?: number;
}

/**
 * Both halves of the relay on one node. As a relaying node it implements DocumentRelay for the sync edge; as an owner
 * (`serve`) it attaches remote connections to its actors as `RemotePeer`s and publishes its topics' frames on NATS.
 */
export class Relay implements DocumentRelay {
  /** Relaying side: local sockets of documents owned elsewhere, by session id. */
  private readonly relayed = new Map<string, RelayedSession>();
  /** Relaying side: NATS subscriptions of topics local relayed sockets are in, with how many sockets each. */
  private readonly topicSubs = new Map<string, { sub: Subscription; count: number }>();
  /** Owner side: remote connections attached to local actors, by session id. */
  private readonly remote = new Map<string, RemoteSession>();
  private readonly subs: Subscription[] = [];

  constructor(private readonly deps: RelayDeps) {
    const { nc, nodeId } = deps;
    this.subs.push(nc.subscribe(subjects.out(nodeId), { callback: (error, msg) => (error === null ? this.fromOwner(msg) : this.failed(error)) }));
    this.subs.push(nc.subscribe(subjects.ping(nodeId), { callback: (error, msg) => (error === null ? msg.respond() : this.failed(error)) }));
    if (deps.ownerOf !== undefined) {
      this.watchdog = setInterval(() => void this.watch(), deps.watchMs ?? 3_000);
      this.watchdog.unref();
    }
  }

  private watchdog: NodeJS.Timeout | undefined;

  /**
   * A killed owner says nothing: its relayed sockets would stay open and hear nothing. Once its lease has lapsed
   * or moved, they are closed with SERVICE_RESTART, so their clients reconnect and a live node takes the document.
   */
  private async watch(): Promise<void> {
    await Promise.all([this.watchOwners(), this.watchRelays()]);
  }

  /**
   * Owner side: a killed relaying node says nothing either, and its connections would stay attached (stale
   * awareness, a document that never unloads). NATS answers "no responders" at once for a node with no
   * subscription left, which is definite; a timeout (NATS itself away) is not, and changes nothing.
   */
  private async watchRelays(): Promise<void> {
    const nodes = new Set([...this.remote.values()].map((session) => session.from));
    await Promise.all(
      [...nodes].map(async (node) => {
        try {
          await this.deps.nc.request(subjects.ping(node), new Uint8Array(0), { timeout: 2_000 });
        } catch (error) {
          if ((error as { code?: string }).code !== ErrorCode.NoResponders) return;
          this.deps.log.warn('relaying node is gone; detaching its connections', { node });
          for (const [sessionId, session] of this.remote) {
            if (session.from !== node) continue;
            this.remote.delete(sessionId);
            session.detach();
          }
        }
      }),
    );
  }

  private async watchOwners(): Promise<void> {
    const byOwner = new Map<string, { key: DocumentKey; owner: string; sessions: RelayedSession[] }>();
    for (const session of this.relayed.values()) {
      const id = `${session.owner}\n${JSON.stringify(session.key)}`;
      const group = byOwner.get(id) ?? { key: session.key, owner: session.owner, sessions: [] };
      group.sessions.push(session);
      byOwner.set(id, group);
    }
    for (const { key, owner, sessions } of byOwner.values()) {
      let now: string | undefined;
      try {
        now = await this.deps.ownerOf?.(key);
      } catch (error) {
        // NATS away: nothing can be told; keep the sockets and look again next time.
        this.deps.log.debug('relay watchdog could not read a lease', { error: String(error) });
        continue;
      }
      if (now === owner) continue;
      for (const session of sessions) session.peer?.close(CLOSE.SERVICE_RESTART, 'the document moved to another node; reconnect');
    }
  }

  /** The publisher the owner's actors use: local sockets, and the topic's subject for relaying nodes. */
  clusterPublisher(): TopicPublisher {
    return {
      publish: (topic, bytes) => {
        this.deps.local.publish(topic, bytes);
        this.deps.nc.publish(subjects.topic(topic), bytes);
      },
      // A connection's own frame: relaying nodes deliver it to all but that connection. Only a remote connection
      // (a socket on a relaying node) needs the skip; a socket of this node is on no other node, so its frames go
      // without headers, the common case (nats.js encodes and the receiver decodes a header block per message).
      publishedBy: (topic, bytes, sender) => {
        if (this.remote.has(sender.sessionId)) this.deps.nc.publish(subjects.topic(topic), bytes, { headers: hdrs({ x: sender.sessionId }) });
        else this.deps.nc.publish(subjects.topic(topic), bytes);
      },
    };
  }

  /** Starts answering attach requests and frames of remote connections for documents this node owns. */
  serve(actors: DocumentActors): void {
    const { nc, nodeId } = this.deps;
    this.subs.push(nc.subscribe(subjects.attach(nodeId), { callback: (error, msg) => (error === null ? void this.attach(actors, msg) : this.failed(error)) }));
    this.subs.push(nc.subscribe(subjects.in(nodeId), { callback: (error, msg) => (error === null ? this.fromRelay(msg) : this.failed(error)) }));
  }

  // ---- relaying side ----

  async connect(key: DocumentKey, owner: string): Promise<ConnectionLease> {
    if (owner === this.deps.nodeId) throw unavailable('this node is taking the document over; retry shortly');
    return new RelayedSession(this, key, owner);
  }

  /**
   * Called by a RelayedSession when its socket opens: registers it, subscribes to the topics the owner will put it
   * in, then asks the owner to attach it. The subscriptions go first, confirmed by a flush (the server has them once
   * it answers): the owner publishes to a topic as soon as the connection is attached, and a topic frame the server
   * routed before this node's subscription would never reach the socket (a gap in its document until it reconnects).
   */
  async open(session: RelayedSession, peer: Peer, hint: RootHint): Promise<void> {
    this.relayed.set(peer.sessionId, session);
    for (const topic of connectionTopics(session.key, peer.editorId, peer.extensions)) this.listen(session, topic);
    try {
      await within(this.deps.nc.flush(), ATTACH_TIMEOUT_MS, 'NATS did not confirm the subscriptions');
    } catch (error) {
      this.deps.log.warn('relay subscribe failed', { owner: session.owner, error: String(error) });
      peer.close(CLOSE.SERVICE_RESTART, 'the document owner is unreachable; reconnect');
      return;
    }
    // Closed meanwhile: its detach went out already, so asking now would attach a connection nobody detaches.
    if (this.relayed.get(peer.sessionId) !== session) return;
    const request: AttachRequest = {
      key: session.key,
      from: this.deps.nodeId,
      hint,
      peer: { sessionId: peer.sessionId, userId: peer.userId, name: peer.name, email: peer.email, editorId: peer.editorId, readOnly: peer.readOnly, extensions: peer.extensions },
    };
    try {
      // request() publishes before it returns: the frames that arrived meanwhile follow the attach request, in order.
      const answer = this.deps.nc.request(subjects.attach(session.owner), json(request), { timeout: ATTACH_TIMEOUT_MS });
      session.requested();
      const reply = parse<AttachReply>((await answer).data);
      // NOT_FOUND: the owner refused it after waiting on a delete of the document (4404, final, as on the owner).
      if (!reply.ok) peer.close(reply.status === 'NOT_FOUND' ? CLOSE.DOCUMENT_DELETED : CLOSE.SERVICE_RESTART, reply.message);
    } catch (error) {
      // The owner is gone (its lease will lapse) or NATS is away: the client reconnects and is served anew.
      this.deps.log.warn('relay attach failed', { owner: session.owner, error: String(error) });
      peer.close(CLOSE.SERVICE_RESTART, 'the document owner is unreachable; reconnect');
    }
  }

  forward(session: RelayedSession, sessionId: string, kind: 'frame' | 'detach', bytes: Uint8Array = new Uint8Array(0)): void {
    this.deps.nc.publish(subjects.in(session.owner), bytes, { headers: hdrs({ s: sessionId, k: kind }) });
  }

  closed(sessionId: string, topics: Iterable<string>): void {
    this.relayed.delete(sessionId);
    for (const topic of topics) {
      const entry = this.topicSubs.get(topic);
      if (entry === undefined) continue;
      if (--entry.count === 0) {
        entry.sub.unsubscribe();
        this.topicSubs.delete(topic);
      }
    }
  }

  private fromOwner(msg: Msg): void {
    const sessionId = msg.headers?.get('s') ?? '';
    const session = this.relayed.get(sessionId);
    if (session === undefined || session.peer === undefined) return;
    const peer = session.peer;
    switch (msg.headers?.get('k')) {
      case 'send':
        // A copy: msg.data views the client's read buffer, which the next read reuses (uWS may queue the bytes).
        peer.send(msg.data.slice());
        return;
      case 'subscribe': {
        const topic = msg.headers?.get('t') ?? '';
        if (!session.joined.has(topic)) {
          session.joined.add(topic);
          peer.subscribe(topic);
        }
        // Usually subscribed already (open); a topic the owner adds later is subscribed now.
        this.listen(session, topic);
        return;
      }
      case 'close':
        peer.close(Number(msg.headers?.get('c') ?? CLOSE.SERVICE_RESTART), msg.headers?.get('r') ?? '');
        return;
      default:
        this.deps.log.warn('relay: unknown message from an owner', { kind: msg.headers?.get('k') });
    }
  }

  /** Counts `session` among the listeners of `topic`'s subject, subscribing to it for the first one. */
  private listen(session: RelayedSession, topic: string): void {
    if (session.topics.has(topic)) return;
    session.topics.add(topic);
    const entry = this.topicSubs.get(topic);
    if (entry !== undefined) entry.count++;
    else this.topicSubs.set(topic, { sub: this.deps.nc.subscribe(subjects.topic(topic), { callback: (error, m) => (error === null ? this.fromTopic(topic, m) : this.failed(error)) }), count: 1 });
  }

  private fromTopic(topic: string, msg: Msg): void {
    // A frame of one remote connection skips that connection, as uWS ws.publish skips the publishing socket.
    const bytes = msg.data.slice();
    const skip = msg.headers?.get('x');
    const sender = skip === undefined || skip === '' ? undefined : this.relayed.get(skip)?.peer;
    if (sender === undefined || !sender.publish(topic, bytes)) this.deps.local.publish(topic, bytes);
    // No actor here looks at these sockets' buffers: without this a reader that stopped reading grew to uWS's backstop,
    // where uWS drops frames silently.
    this.deps.local.relayed?.(topic, bytes.length);
  }

  // ---- owner side ----

  private async attach(actors: DocumentActors, msg: Msg): Promise<void> {
    let request: AttachRequest;
    try {
      request = parse<AttachRequest>(msg.data);
    } catch (error) {
      this.deps.log.warn('relay: unreadable attach request', { error: String(error) });
      return;
    }
    // Registered before any await, so frames that follow the request wait in the session's queue.
    const session = new RemoteSession({ nc: this.deps.nc, local: this.deps.local, outSubject: subjects.out }, request);
    this.remote.set(request.peer.sessionId, session);
    try {
      const lease = await actors.acquire(request.key);
      session.start(lease, request.hint);
      msg.respond(json({ ok: true } satisfies AttachReply));
    } catch (error) {
      this.remote.delete(request.peer.sessionId);
      const appError = toAppError(error);
      msg.respond(json({ ok: false, status: appError.status, message: appError.message } satisfies AttachReply));
    }
  }

  private fromRelay(msg: Msg): void {
    const sessionId = msg.headers?.get('s') ?? '';
    const session = this.remote.get(sessionId);
    if (session === undefined) return;
    if (msg.headers?.get('k') === 'detach') {
      this.remote.delete(sessionId);
      session.detach();
      return;
    }
    session.frame(msg.data.slice());
  }

  private failed(error: Error): void {
    this.deps.log.warn('relay subscription error', { error: String(error) });
  }

  /** Stops relaying; remote connections attached here are detached (their sockets are closed by their node's stop). */
  async close(): Promise<void> {
    if (this.watchdog !== undefined) clearInterval(this.watchdog);
    for (const session of [...this.relayed.values()]) session.peer?.close(CLOSE.SERVICE_RESTART, 'server restarting');
    for (const session of this.remote.values()) session.detach();
    this.remote.clear();
    for (const sub of this.subs) sub.unsubscribe();
    for (const { sub } of this.topicSubs.values()) sub.unsubscribe();
    this.topicSubs.clear();
  }
}

/** Relaying side: one local socket of a document owned by `owner`; the sync edge sees it as the connection's target. */
class RelayedSession implements ConnectionLease, ConnectionTarget {
  peer: Peer | undefined;
  /** Topics whose NATS subject this session is counted on. */
  readonly topics = new Set<string>();
  /** Topics the owner put the local socket in (uWS). */
  readonly joined = new Set<string>();
  /** Frames received before the attach request went out (the topics are being subscribed first); then undefined. */
  private waiting: Uint8Array[] | undefined = [];

  constructor(private readonly relay: Relay, readonly key: DocumentKey, readonly owner: string) {}

  get actor(): ConnectionTarget {
    return this;
  }

  /** The owner enforces the connection limit when it attaches; here no socket counts against it. */
  get connectionCount(): number {
    return 0;
  }

  attach(peer: Peer, hint: RootHint = {}): void {
    this.peer = peer;
    void this.relay.open(this, peer, hint);
  }

  receive(peer: Peer, _message: unknown, bytes: Uint8Array): boolean {
    if (this.waiting === undefined) {
      this.relay.forward(this, peer.sessionId, 'frame', bytes);
      return true;
    }
    // The owner drops frames of a connection it has not been asked to attach; these wait for the attach request.
    if (this.waiting.length >= MAX_WAITING_FRAMES) return false;
    this.waiting.push(bytes);
    return true;
  }

  /** The attach request went out: the frames that waited for it follow it. */
  requested(): void {
    const waiting = this.waiting ?? [];
    this.waiting = undefined;
    const sessionId = this.peer?.sessionId;
    if (sessionId !== undefined) for (const bytes of waiting) this.relay.forward(this, sessionId, 'frame', bytes);
  }

  detach(peer: Peer): void {
    this.relay.forward(this, peer.sessionId, 'detach');
    this.relay.closed(peer.sessionId, this.topics);
  }

  /** Nothing is held here: the owner's lease on its actor ends with the detach. */
  release(): void {
    return;
  }
}

