// Owns the documents the memory and load benches store: deterministic Yjs content of a given size, built from many edits.
import * as Y from 'yjs';

export interface Content {
  /** The whole document as one Yjs update (what a client's sync step 2 carries). */
  readonly update: Uint8Array;
  /** Length of the `content` text once applied. */
  readonly length: number;
}

/** A small deterministic PRNG (mulberry32) so every server stores byte-identical documents. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Text of about `bytes` characters typed as `bytes / chunk` inserts at random positions (so the CRDT holds many
 * items, as an edited document does, not one big string), with a few deletions mixed in.
 */
export function buildContent(bytes: number, chunk = 64, seed = 42): Content {
  const doc = new Y.Doc();
  doc.clientID = 1000 + seed;
  const text = doc.getText('content');
  const next = random(seed);
  const alphabet = 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 ';
  while (text.length < bytes) {
    let piece = '';
    for (let i = 0; i < chunk; i++) piece += alphabet[Math.floor(next() * alphabet.length)] ?? ' ';
    text.insert(Math.floor(next() * (text.length + 1)), piece);
    if (next() < 0.1 && text.length > chunk) text.delete(Math.floor(next() * (text.length - 8)), 8);
  }
  const update = Y.encodeStateAsUpdate(doc);
  const length = text.length;
  doc.destroy();
  return { update, length };
}

/** A fresh client document holding `content` (each call gets its own client id). */
export function docWith(content: Content): Y.Doc {
  const doc = new Y.Doc();
  Y.applyUpdate(doc, content.update);
  return doc;
}

/** Resolves once `doc`'s `content` text reaches `length` characters (the server delivered the whole state). */
export function whenLength(doc: Y.Doc, length: number): Promise<void> {
  const text = doc.getText('content');
  return new Promise((resolve) => {
    if (text.length >= length) {
      resolve();
      return;
    }
    const check = (): void => {
      if (text.length >= length) {
        text.unobserve(check);
        resolve();
      }
    };
    text.observe(check);
  });
}
