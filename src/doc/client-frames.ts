// Owns what a connection's frames do to its document inside the actor's mailbox: sync answers, applied updates, awareness, and a viewer's refused edits.
import * as Y from 'yjs';
import { CLOSE } from '../errors.js';
import { limitRefusals } from '../metrics/instruments.js';
import { isEmptyUpdate, writePermissionDenied, type ClientMessage } from '../sync/protocol.js';
import type { DocumentAwareness } from './document-awareness.js';
import type { EditorDoc } from './editor-doc.js';
import type { Peer } from './peer.js';

/** The actor as the frames see it (src/doc/actor.ts). */
export interface FrameTarget {
  /** The store `peer` is attached to; undefined once it has gone. */
  attachedStore(peer: Peer): EditorDoc | undefined;
  /** A client's update, applied to `store` as is: stamp, log and fan out its bytes (and `frame`, the frame holding them). */
  clientChanged(store: EditorDoc, update: Uint8Array, peer: Peer, frame?: Uint8Array): void;
  /** Whether `added` more bytes keep the document within MAX_DOCUMENT_BYTES (DocumentActor.fits). */
  fits(added: number): boolean;
  /** The document's awareness, made at first use. */
  readonly documentAwareness: DocumentAwareness;
}

/**
 * Viewers already told that their edits are dropped. One set for all documents rather than one per actor: a peer
 * belongs to one document, and most documents never see a viewer's edit (an empty WeakSet per actor costs memory).
 */
const deniedOnce = new WeakSet<Peer>();

/** Runs one validated client frame; called from the actor's mailbox. */
export function handleClientFrame(target: FrameTarget, peer: Peer, message: ClientMessage): void {
  // Frames still queued from a connection that has gone are dropped; its client resyncs when it reconnects.
  const store = target.attachedStore(peer);
  if (store === undefined) return;
  switch (message.kind) {
    case 'sync-step1':
      // (From a kept answer) the changes made since its state was encoded, in order, then the SyncStep2.
      for (const frame of store.syncAnswer(message.stateVector)) if (!peer.send(frame)) return;
      return;
    case 'update':
      // The common case, kept free of re-encoding: the client's own bytes go to the log and, alone in their turn, out.
      if (peer.readOnly) refuseEdit(peer, message.update);
      else if (!target.fits(message.update.length)) refuseGrowth(peer);
      else if (store.applyClientUpdate(message.update, peer)) target.clientChanged(store, message.update, peer, message.frame);
      return;
    case 'sync-step2':
      // Applied through the update event, which carries only what was new: a reconnecting client sends its whole
      // state, which must not be logged or passed on again.
      if (peer.readOnly) refuseEdit(peer, message.update);
      else if (!target.fits(message.update.length)) refuseGrowth(peer);
      else Y.applyUpdate(store.doc, message.update, peer);
      return;
    case 'awareness':
      target.documentAwareness.receive(peer, message.update, message.entries);
      return;
    case 'query-awareness':
      peer.send(target.documentAwareness.query());
      return;
    case 'auth':
      return;
    case 'malformed':
      peer.close(CLOSE.MALFORMED_FRAME, 'malformed frame');
      return;
  }
}

/** A viewer's edit is dropped; it is told once per connection (an empty SyncStep2 is no edit). */
function refuseEdit(peer: Peer, update: Uint8Array): void {
  if (isEmptyUpdate(update) || deniedOnce.has(peer)) return;
  deniedOnce.add(peer);
  peer.send(writePermissionDenied('viewer access: your edits are not saved or shared'));
}

/**
 * An edit past MAX_DOCUMENT_BYTES is not applied, and its connection is closed with a final code: the client keeps the
 * edit, and would send it again at every reconnect (its SyncStep2 carries all the server lacks).
 */
function refuseGrowth(peer: Peer): void {
  limitRefusals.document_bytes++;
  peer.close(CLOSE.DOCUMENT_TOO_LARGE, 'the document has reached its size limit (MAX_DOCUMENT_BYTES); this edit was not saved');
}
