// Owns the floor: the least a correct Yjs server on Plait's stack does (uWS, one Y.Doc per room, apply once, relay the frame as sent).
import type * as Uws from 'uWebSockets.js';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { loadUws } from '../../src/http/uws.js';
import { readClientMessage, type ClientMessage } from '../../src/sync/protocol.js';
import { serveHost } from '../lib/host.js';
import { FloorLog } from './floor-log.js';

/**
 * What Plait cannot beat on one core (issue 18): no auth, no log, no merging, no awareness state kept. A joiner
 * gets SyncStep1 and answers the client's SyncStep1 with the room's state; an update is applied to the room's
 * Y.Doc once and the client's own frame is published to the room's topic unchanged (uWS excludes the sender).
 * Speaks the y-websocket wire format on `/<room>`, so the stock provider connects as to `@y/websocket-server`.
 */
const MESSAGE_SYNC = 0;
const MESSAGE_AWARENESS = 1;

interface Conn {
  readonly room: string;
  /** Cleared at close: a deferred publish must not touch a closed socket. */
  open?: boolean;
}

/**
 * Variants that isolate two costs of Plait's fan-out path (bench/README, "Fan-out CPU per delivery"), chosen by
 * server kind (bench/lib/launch.ts): FLOOR_TOPICS=2 subscribes every connection to a second topic of its room (as
 * Plait subscribed to a document topic and a store topic), FLOOR_DEFER=1 publishes from setImmediate, corked, as
 * Plait's per-turn fan-out does, instead of inside uWS's message callback.
 */
const TOPICS = Number(process.env.FLOOR_TOPICS ?? 1);
const DEFER = process.env.FLOOR_DEFER === '1';
/**
 * Two more variants add what Plait must do and the floor does not, to measure what they cost on the floor's bare path
 * (bench/README, "Eleventh session"): FLOOR_CHECK=1 decodes and validates every frame with Plait's codec
 * (`readClientMessage`: the house rule that nothing is applied before it validates), FLOOR_LOG=1 appends every
 * applied update to Plait's own update log in LMDB under DATA_DIR (group commit every 100 ms, compaction by size).
 */
const CHECK = process.env.FLOOR_CHECK === '1';
const LOG = process.env.FLOOR_LOG === '1';

serveHost(async () => {
  const uws = loadUws();
  const log = LOG ? new FloorLog(process.env.DATA_DIR ?? '') : undefined;
  const rooms = new Map<string, { doc: Y.Doc; members: number }>();
  const app = uws.App();
  const deferred: Array<{ ws: Uws.WebSocket<Conn>; room: string; bytes: Uint8Array }> = [];
  const flush = (): void => {
    for (const { ws, room, bytes } of deferred.splice(0)) if (ws.getUserData().open === true) ws.cork(() => ws.publish(room, bytes, true));
  };
  const publish = (ws: Uws.WebSocket<Conn>, room: string, bytes: Uint8Array): void => {
    if (!DEFER) {
      ws.publish(room, bytes, true);
      return;
    }
    // The message's buffer is reused once the callback returns: a deferred publish needs its own copy (Plait copies too).
    if (deferred.push({ ws, room, bytes: bytes.slice() }) === 1) setImmediate(flush);
  };
  /** The variants' path: the frame read by Plait's codec (validated whole), an update applied and, with FLOOR_LOG, logged. */
  const checkedMessage = (ws: Uws.WebSocket<Conn>, room: string, doc: Y.Doc, bytes: Uint8Array): void => {
    const message = CHECK ? readClientMessage(bytes) : uncheckedMessage(bytes);
    switch (message.kind) {
      case 'sync-step1':
        ws.send(syncFrame((encoder) => syncProtocol.writeSyncStep2(encoder, doc, message.stateVector)), true);
        return;
      case 'sync-step2':
        Y.applyUpdate(doc, message.update, ws);
        return;
      case 'update':
        Y.applyUpdate(doc, message.update, ws);
        log?.append(room, doc, message.update);
        publish(ws, room, bytes);
        return;
      case 'awareness':
        publish(ws, room, bytes);
        return;
      default:
        return;
    }
  };
  app.ws<Conn>('/*', {
    maxPayloadLength: 16 * 1024 * 1024,
    maxBackpressure: 64 * 1024 * 1024,
    idleTimeout: 120,
    upgrade: (res, req, context) => {
      res.upgrade<Conn>({ room: req.getUrl().slice(1) }, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), req.getHeader('sec-websocket-extensions'), context);
    },
    open: (ws) => {
      const { room } = ws.getUserData();
      let entry = rooms.get(room);
      if (entry === undefined) {
        entry = { doc: new Y.Doc(), members: 0 };
        rooms.set(room, entry);
      }
      entry.members++;
      ws.getUserData().open = true;
      ws.subscribe(room);
      if (TOPICS === 2) ws.subscribe(`${room}#d`);
      const encoder = encoding.createEncoder();
      encoding.writeVarUint(encoder, MESSAGE_SYNC);
      syncProtocol.writeSyncStep1(encoder, entry.doc);
      ws.send(encoding.toUint8Array(encoder), true);
    },
    message: (ws, message) => {
      const { room } = ws.getUserData();
      const entry = rooms.get(room);
      if (entry === undefined) return;
      const bytes = new Uint8Array(message);
      if (CHECK || log !== undefined) {
        // A view of uWS's buffer, which is detached once the callback returns: the log keeps the update, so it copies.
        checkedMessage(ws, room, entry.doc, log === undefined ? bytes : bytes.slice());
        return;
      }
      const decoder = decoding.createDecoder(bytes);
      const type = decoding.readVarUint(decoder);
      if (type === MESSAGE_AWARENESS) {
        publish(ws, room, bytes);
        return;
      }
      if (type !== MESSAGE_SYNC) return;
      const reply = encoding.createEncoder();
      encoding.writeVarUint(reply, MESSAGE_SYNC);
      const subtype = syncProtocol.readSyncMessage(decoder, reply, entry.doc, null);
      if (subtype === syncProtocol.messageYjsSyncStep1) ws.send(encoding.toUint8Array(reply), true);
      // The client's own frame, as it sent it (a view of uWS's buffer: publish copies it before this callback returns).
      else publish(ws, room, bytes);
    },
    close: (ws) => {
      const { room } = ws.getUserData();
      ws.getUserData().open = false;
      const entry = rooms.get(room);
      if (entry !== undefined && --entry.members === 0) {
        const { doc } = entry;
        if (log === undefined) doc.destroy();
        else void log.forget(room).then(() => doc.destroy());
        rooms.delete(room);
      }
    },
  });
  const socket = await new Promise<Uws.us_listen_socket>((resolve, reject) => {
    app.listen('127.0.0.1', 0, (listen) => (listen === false ? reject(new Error('floor could not listen')) : resolve(listen)));
  });
  return {
    port: uws.us_socket_local_port(socket),
    stop: async () => {
      uws.us_listen_socket_close(socket);
      await log?.close();
    },
    ...(log === undefined ? {} : { settle: () => log.flush() }),
  };
});

/** FLOOR_LOG without FLOOR_CHECK: the envelope read as the plain floor reads it, the payload not validated. */
function uncheckedMessage(bytes: Uint8Array): ClientMessage {
  const decoder = decoding.createDecoder(bytes);
  const type = decoding.readVarUint(decoder);
  if (type === MESSAGE_AWARENESS) return { kind: 'awareness', update: bytes, entries: [] };
  if (type !== MESSAGE_SYNC) return { kind: 'auth' };
  const step = decoding.readVarUint(decoder);
  const payload = decoding.readVarUint8Array(decoder);
  if (step === syncProtocol.messageYjsSyncStep1) return { kind: 'sync-step1', stateVector: payload };
  if (step === syncProtocol.messageYjsSyncStep2) return { kind: 'sync-step2', update: payload };
  return { kind: 'update', update: payload, frame: bytes };
}

function syncFrame(write: (encoder: encoding.Encoder) => void): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MESSAGE_SYNC);
  write(encoder);
  return encoding.toUint8Array(encoder);
}
