// Owns the /sync/* WebSocket endpoint: upgrade (auth, access, lease), open/attach, message copy+validate, close/detach.
import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse, WebSocketBehavior, us_socket_context_t } from 'uWebSockets.js';
import type { UserClaims, UserTokens } from '../auth/user-tokens.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { RootHint } from '../doc/actor.js';
import type { DocumentKey } from '../document-key.js';
import type { DocumentActors } from '../doc/registry.js';
import { NotOwnerError } from '../doc/ownership.js';
import type { ConnectionLease, DocumentRelay } from '../doc/relay-port.js';
import { AppError, CLOSE, permissionDenied, resourceExhausted, toAppError, unauthenticated, unavailable } from '../errors.js';
import type { ByteBudget } from '../byte-budget.js';
import { writeError, type ResponseState } from '../edge/reply.js';
import type { Logger } from '../log.js';
import type { AccessResolver, DocumentAccess } from '../tenant/access.js';
import type { Directory } from '../tenant/directory.js';
import type { Workspaces } from '../tenant/workspaces.js';
import { limitRefusals, syncCounts } from '../metrics/instruments.js';
import { readClientMessage, writeReadOnly } from '../sync/protocol.js';
import { DeferredLease } from './deferred-lease.js';
import { SocketPeer } from './socket-peer.js';
import type { SocketTopics } from './socket-topics.js';
import { answerProtocol, parseSyncTarget } from './target.js';

export interface SyncDeps {
  readonly config: Pick<Config, 'wsMaxPayloadBytes' | 'wsMaxBackpressureBytes' | 'wsIdleTimeoutSeconds' | 'maxConnectionsPerDocument' | 'maxConnectionsPerKey' | 'corsOrigin'>;
  readonly log: Logger;
  readonly userTokens: Pick<UserTokens, 'verify'>;
  readonly workspaces: Pick<Workspaces, 'apiKeyRecord'>;
  readonly access: AccessResolver;
  readonly documentActors: DocumentActors;
  readonly clock: Clock;
  /** The REST gate: once a stop has begun (`closed`), upgrades are refused with 503 as REST requests are. */
  readonly gate: { readonly closed: boolean };
  /** The permission provider, asked when stored grants give no access (src/tenant/permission-provider.ts). */
  readonly providerAccess?: (userId: string, key: DocumentKey) => Promise<DocumentAccess>;
  /** The API key's allowed web origins (src/tenant/domains.ts); a browser page from another origin is refused 403. */
  readonly domains?: { allows(apiKey: string, origin: string): boolean };
  /** Cluster mode: connections to a document another node owns are relayed to it (src/cluster/relay.ts). */
  readonly relay?: DocumentRelay;
  /** Cluster mode: catches up with the cluster's state (true once done), so an API key another node just created is found. */
  readonly catchUp?: () => Promise<boolean>;
  /** Directory changes (grants, groups, users, access types, disabled states): open sockets re-check their access. */
  readonly directory?: Pick<Directory, 'onChange'>;
  /** API_KEY_BYTES_PER_SECOND, shared with REST: every frame is charged to its API key before anything is done with it. */
  readonly bytes?: Pick<ByteBudget, 'charge' | 'bytesPerSecond'>;
  /** API_KEY_SYNC_MESSAGES_PER_SECOND: every sync message (type 0) takes one, before anything is done with it. */
  readonly messages?: { tryTake(apiKey: string): number; readonly perSecond: number };
  /** The sockets by topic, through which the process's frames reach them (src/server.ts makes it over uWS's app). */
  readonly sockets: SocketTopics;
}

/** When the connection's access must be looked at again: the grant's expiresAt or the token's exp, whichever is first. */
interface Deadline {
  readonly at: number;
  /** 'grant': re-resolve access (another grant may still hold); 'token': the token is dead, close. */
  readonly kind: 'grant' | 'token';
}

/** uWS user data of one sync socket, built during the upgrade. */
interface Session {
  readonly key: DocumentKey;
  readonly editorId: string;
  readonly userId: string;
  readonly name: string | undefined;
  readonly email: string | undefined;
  readonly sessionId: string;
  /** Set when a directory change downgrades the connection to viewer while it is open. */
  readOnly: boolean;
  readonly extensions: boolean;
  readonly hint: RootHint;
  /** Held from the upgrade until the socket closes, so the actor cannot unload under a connection. */
  readonly lease: ConnectionLease;
  readonly claims: UserClaims;
  /**
   * Set by open(). uWS hands open() and the later handlers a shallow copy of the object given to upgrade(), so the
   * upgrade's own object learns of the open only through a member both share.
   */
  readonly opened: { value: boolean };
  deadline: Deadline;
  peer?: SocketPeer;
  cancelTimer?: () => void;
}

interface CopiedUpgrade {
  readonly url: string;
  readonly query: string;
  readonly secKey: string;
  readonly secProtocol: string;
  readonly secExtensions: string;
  /** The page's Origin ('' from non-browser clients, which send none). */
  readonly origin: string;
}

export function syncBehavior(deps: SyncDeps): WebSocketBehavior<Session> {
  const { config, log } = deps;
  /** Open sessions by API key, then organization: what a directory change must look at again. */
  const open = new Map<string, Map<string, Set<Session>>>();
  /** How many sessions each API key holds open (MAX_CONNECTIONS_PER_KEY), kept with `open`. */
  const openPerKey = new Map<string, number>();
  deps.directory?.onChange((apiKey, organizationIds) => {
    const byOrganization = open.get(apiKey);
    if (byOrganization === undefined) return;
    const now = Date.now();
    const all = organizationIds.has(undefined);
    for (const [organizationId, sessions] of byOrganization) {
      if (!all && !organizationIds.has(organizationId)) continue;
      for (const session of [...sessions]) {
        try {
          recheck(session, now);
        } catch (error) {
          log.error('access re-check failed; closing the connection', { error, sessionId: session.sessionId });
          session.peer?.close(CLOSE.INTERNAL, 'access could not be checked; reconnect');
        }
      }
    }
  });

  function track(session: Session): void {
    let byOrganization = open.get(session.key.apiKey);
    if (byOrganization === undefined) open.set(session.key.apiKey, (byOrganization = new Map()));
    let sessions = byOrganization.get(session.key.organizationId);
    if (sessions === undefined) byOrganization.set(session.key.organizationId, (sessions = new Set()));
    if (sessions.has(session)) return;
    sessions.add(session);
    openPerKey.set(session.key.apiKey, (openPerKey.get(session.key.apiKey) ?? 0) + 1);
  }

  function untrack(session: Session): void {
    const byOrganization = open.get(session.key.apiKey);
    const sessions = byOrganization?.get(session.key.organizationId);
    if (byOrganization === undefined || sessions === undefined || !sessions.delete(session)) return;
    const left = (openPerKey.get(session.key.apiKey) ?? 1) - 1;
    if (left <= 0) openPerKey.delete(session.key.apiKey);
    else openPerKey.set(session.key.apiKey, left);
    if (sessions.size === 0) byOrganization.delete(session.key.organizationId);
    if (byOrganization.size === 0) open.delete(session.key.apiKey);
  }

  /**
   * After a directory change: no access closes with 4403; editor to viewer makes the connection read-only at once
   * (its later updates are refused and it is told with the read-only frame); a new grant expiry re-arms the timer.
   * A viewer who became an editor keeps a read-only connection until it reconnects.
   */
  function recheck(session: Session, now: number): void {
    const peer = session.peer;
    if (peer === undefined || peer.closed) return;
    const access = deps.access.documentAccess(session.claims, session.key, now);
    if (access.role === null) {
      peer.close(CLOSE.PERMISSION_REVOKED, 'access to this document was revoked');
      return;
    }
    if (access.role === 'viewer' && !session.readOnly) {
      session.readOnly = true;
      peer.readOnly = true;
      peer.send(writeReadOnly('access changed to viewer: this connection is now read-only'));
    }
    session.cancelTimer?.();
    session.deadline = deadlineOf(session.claims, access.expiresAt);
    armDeadline(session, peer);
  }

  async function admit(request: CopiedUpgrade): Promise<Session> {
    if (deps.gate.closed) throw unavailable('the server is shutting down; reconnect shortly');
    const target = parseSyncTarget(request.url, request.query, request.secProtocol);
    const claims = await deps.userTokens.verify(target.token);
    if (!apiKeyExists(deps.workspaces, claims.apiKey) && !(deps.catchUp !== undefined && (await deps.catchUp()) && apiKeyExists(deps.workspaces, claims.apiKey))) {
      throw unauthenticated('the API key this token was issued for no longer exists');
    }
    if (deps.domains !== undefined && !deps.domains.allows(claims.apiKey, request.origin)) {
      throw permissionDenied(`origin ${request.origin} is not among this API key's domains`);
    }
    // Counted at open: upgrades still in flight may pass it by a few.
    if (config.maxConnectionsPerKey > 0 && (openPerKey.get(claims.apiKey) ?? 0) >= config.maxConnectionsPerKey) {
      limitRefusals.sync_connections_per_key++;
      throw resourceExhausted(`this API key has reached its limit of ${config.maxConnectionsPerKey} sync connections (MAX_CONNECTIONS_PER_KEY)`, 5);
    }
    const key: DocumentKey = { apiKey: claims.apiKey, organizationId: target.organizationId, documentId: target.documentId };
    const now = deps.clock.now();
    let access = deps.access.documentAccess(claims, key, now);
    if (access.role === null && deps.providerAccess !== undefined) access = await deps.providerAccess(claims.userId, key);
    if (access.role === null) throw permissionDenied(`user ${claims.userId} has no access to document ${target.documentId}`);
    const leasableNow = deps.documentActors.leasableNow(key);
    const leasing = deps.documentActors.acquire(key).catch((error: unknown) => {
      if (error instanceof NotOwnerError && deps.relay !== undefined) return deps.relay.connect(key, error.owner);
      throw error;
    });
    // A lease that needs I/O (a cluster claim, a relay, an unload in progress) is waited for behind the upgrade, so
    // the 101 still goes out in uWS's cork (src/ws/deferred-lease.ts); its socket is closed if the lease fails.
    const lease: ConnectionLease = leasableNow ? await leasing : new DeferredLease(leasing, log);
    if (lease.actor.connectionCount >= config.maxConnectionsPerDocument) {
      lease.release();
      throw resourceExhausted(`the document has reached its limit of ${config.maxConnectionsPerDocument} connections`, 5);
    }
    return {
      key,
      editorId: target.editorId,
      userId: claims.userId,
      name: typeof claims.userProperties.name === 'string' ? claims.userProperties.name : undefined,
      email: typeof claims.userProperties.email === 'string' ? claims.userProperties.email : undefined,
      sessionId: randomUUID(),
      readOnly: access.role === 'viewer',
      extensions: target.extensions,
      hint: { ...(target.type === undefined ? {} : { type: target.type }), ...(target.contentKey === undefined ? {} : { contentKey: target.contentKey }) },
      lease,
      claims,
      opened: { value: false },
      deadline: deadlineOf(claims, access.expiresAt),
    };
  }

  /** Timer callbacks must not throw (it would end the process): a failed access check closes this socket only. */
  function armDeadline(session: Session, peer: SocketPeer): void {
    try {
      checkDeadline(session, peer);
    } catch (error) {
      log.error('access re-check failed; closing the connection', { error, sessionId: session.sessionId });
      peer.close(CLOSE.INTERNAL, 'access could not be checked; reconnect');
    }
  }

  function checkDeadline(session: Session, peer: SocketPeer): void {
    const now = deps.clock.now();
    const delay = session.deadline.at - now;
    if (delay > 0) {
      session.cancelTimer = deps.clock.setTimer(() => armDeadline(session, peer), delay, { unref: true });
      return;
    }
    if (session.deadline.kind === 'token') {
      peer.close(CLOSE.TOKEN_EXPIRED, 'the user token has expired');
      return;
    }
    // The deciding grant lapsed; another one (an organization grant, a group) may still give the same role.
    const access = deps.access.documentAccess(session.claims, session.key, now);
    if (access.role === null || (access.role === 'viewer') !== session.readOnly) {
      peer.close(CLOSE.PERMISSION_REVOKED, 'access to this document has expired or changed');
      return;
    }
    const next = deadlineOf(session.claims, access.expiresAt);
    if (next.at <= now) {
      peer.close(CLOSE.PERMISSION_REVOKED, 'access to this document has expired');
      return;
    }
    session.deadline = next;
    armDeadline(session, peer);
  }

  return {
    maxPayloadLength: config.wsMaxPayloadBytes,
    // Plait closes a socket past WS_MAX_BACKPRESSURE_BYTES itself, with 1013 (SocketPeer.checkBackpressure). uWS's own
    // limit is only a backstop set well above it: at its limit uWS drops frames, the close frame included, and with
    // closeOnBackpressureLimit it shuts the socket down without one, which clients see as 1006.
    maxBackpressure: backstopBytes(config),
    // Typed as a number by this uWS build; the native side reads it as a flag.
    closeOnBackpressureLimit: 0,
    idleTimeout: config.wsIdleTimeoutSeconds,
    sendPingsAutomatically: true,

    upgrade: (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) => {
      // req dies when this function returns: copy everything first.
      const request: CopiedUpgrade = {
        url: req.getUrl(),
        query: req.getQuery(),
        secKey: req.getHeader('sec-websocket-key'),
        secProtocol: req.getHeader('sec-websocket-protocol'),
        secExtensions: req.getHeader('sec-websocket-extensions'),
        origin: req.getHeader('origin'),
      };
      const state: ResponseState = { aborted: false, requestId: randomUUID(), corsOrigin: config.corsOrigin };
      res.onAborted(() => {
        state.aborted = true;
      });
      admit(request).then(
        (session) => {
          if (state.aborted) {
            session.lease.release();
            return;
          }
          state.aborted = true;
          // Not inside res.cork: in this uWS build (20.30) cork() runs its HTTP connection-close check after the
          // handler on what is by then a WebSocket whenever the upgrade reallocated the socket in place, and closes it
          // right after open without a close frame (1006 on both ends; fixed upstream in uWebSockets #1929, 2026).
          // admit() waits on no I/O for a token checked by node:crypto and a document this process can lease now
          // (else a DeferredLease waits behind the upgrade): this runs in the upgrade callback's microtask drain, still
          // corked by uWS (101 and open frames in one send). After real I/O (a cluster catch-up for an unknown API key,
          // an access provider) the 101 goes out uncorked, a send per header piece, with a warning on stderr
          // (docs/protocol.md, Known issues).
          res.upgrade(session, request.secKey, answerProtocol(request.secProtocol), request.secExtensions, context);
          // uWS runs open() inside upgrade(); if it did not, no socket will ever release the lease.
          if (!session.opened.value) session.lease.release();
        },
        (error: unknown) => {
          const appError = toAppError(error);
          if (appError.status === 'INTERNAL') log.error('sync upgrade failed', { error });
          else log.info('sync connection refused', { status: appError.status, message: appError.message, path: request.url });
          writeError(res, state, appError, true);
        },
      );
    },

    open: (ws) => {
      const session = ws.getUserData();
      session.opened.value = true;
      const peer = new SocketPeer(ws, session, config.wsMaxBackpressureBytes, deps.sockets);
      session.peer = peer;
      syncCounts.opened++;
      log.info('sync connection opened', { sessionId: session.sessionId, userId: session.userId, documentId: session.key.documentId, editorId: session.editorId, readOnly: session.readOnly });
      track(session);
      session.lease.actor.attach(peer, session.hint);
      armDeadline(session, peer);
    },

    message: (ws, message, isBinary) => {
      const session = ws.getUserData();
      const peer = session.peer;
      syncCounts.framesIn++;
      if (peer === undefined || peer.closed) return;
      if (!isBinary) {
        peer.close(CLOSE.MALFORMED_FRAME, 'text frames are not part of the protocol');
        return;
      }
      // The ArrayBuffer is neutered when this callback returns and the actor may run later: copy it.
      const bytes = new Uint8Array(message.slice(0));
      // Sync frames (type 0: what changes and grows a store) are charged before they are read. Past the budget the
      // frame is not applied but its socket closed, never dropped alone (the client would diverge): it reconnects, and
      // its resync sends the content again. Awareness frames are bounded per connection instead (awareness-guard.ts):
      // a large workspace's cursors must not spend what its edits need.
      if (bytes[0] === 0 && deps.bytes !== undefined && deps.bytes.charge(session.key.apiKey, bytes.length) > 0) {
        limitRefusals.api_key_bytes++;
        peer.close(CLOSE.BACKPRESSURE, `this API key sent more than ${deps.bytes.bytesPerSecond} bytes per second (API_KEY_BYTES_PER_SECOND); reconnect to resync`);
        return;
      }
      // Counted apart from the bytes: what a message costs (a Yjs apply, a log append, a fan-out) is mostly per message,
      // and 40,000 one-character updates a second fit in any byte budget (bench/README.md, "Twentieth session").
      if (bytes[0] === 0 && deps.messages !== undefined && deps.messages.tryTake(session.key.apiKey) > 0) {
        limitRefusals.api_key_sync_messages++;
        peer.close(CLOSE.BACKPRESSURE, `this API key sent more than ${deps.messages.perSecond} sync messages per second (API_KEY_SYNC_MESSAGES_PER_SECOND); reconnect to resync`);
        return;
      }
      const parsed = readClientMessage(bytes);
      if (parsed.kind === 'malformed') {
        log.debug('closing a connection that sent a malformed frame', { reason: parsed.reason, sessionId: session.sessionId });
        peer.close(CLOSE.MALFORMED_FRAME, 'malformed frame');
        return;
      }
      if (!session.lease.actor.receive(peer, parsed, bytes)) peer.close(CLOSE.BACKPRESSURE, 'the document or its API key is overloaded (MAILBOX_CAPACITY, API_KEY_SYNC_CPU_MS_PER_SECOND); reconnect to resync');
    },

    // A socket with frames queued (SocketPeer) writes more of them as its buffer drains.
    drain: (ws) => ws.getUserData().peer?.drained(),

    close: (ws, code, message) => {
      const session = ws.getUserData();
      session.cancelTimer?.();
      untrack(session);
      const peer = session.peer;
      log.info('sync connection closed', { code, reason: Buffer.from(message).toString('utf8'), sessionId: session.sessionId, byServer: peer?.closed === true });
      if (peer === undefined) return;
      syncCounts.closed++;
      peer.ended();
      session.lease.actor.detach(peer);
      // The lease kept the actor loaded for the life of the socket; detach is queued ahead of the idle check.
      session.lease.release();
    },
  };
}

/** uWS's own backpressure limit: room above Plait's for the largest frame that can push a socket past it, plus the close frame. */
function backstopBytes(config: Pick<Config, 'wsMaxBackpressureBytes' | 'wsMaxPayloadBytes'>): number {
  return Math.min(2 ** 31 - 1, 2 * config.wsMaxBackpressureBytes + 4 * config.wsMaxPayloadBytes);
}

function deadlineOf(claims: UserClaims, accessExpiresAt: number | undefined): Deadline {
  const tokenExpiresAt = claims.expiresAt * 1000;
  return accessExpiresAt !== undefined && accessExpiresAt < tokenExpiresAt ? { at: accessExpiresAt, kind: 'grant' } : { at: tokenExpiresAt, kind: 'token' };
}

function apiKeyExists(workspaces: Pick<Workspaces, 'apiKeyRecord'>, apiKey: string): boolean {
  try {
    workspaces.apiKeyRecord(apiKey);
    return true;
  } catch (error) {
    if (error instanceof AppError && error.status === 'NOT_FOUND') return false;
    throw error;
  }
}
