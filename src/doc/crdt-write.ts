// Owns a REST CRDT write's plan: the Yjs update that replaces a store's content, made on a scratch copy of the store.
import * as Y from 'yjs';
import { invalidArgument } from '../errors.js';
import type { StoreType } from '../store/snapshots.js';
import { replaceData } from './crdt.js';
import type { EditorDoc } from './editor-doc.js';

export interface StoreWrite {
  readonly type: StoreType;
  readonly data: unknown;
  readonly contentKey?: string;
}

/**
 * The update that makes `store` hold `write` (undefined when the content is already that), and the content key it
 * uses. Made on a scratch copy: if the write throws half way (data Yjs cannot hold) or does not fit, the store is
 * untouched, since a Yjs transaction that throws still keeps and emits what it did before the throw.
 */
export function planWrite(store: EditorDoc, write: StoreWrite): { readonly contentKey: string; readonly update: Uint8Array | undefined } {
  const contentKey = write.contentKey ?? store.contentKey;
  const scratch = new Y.Doc();
  let problem: string | undefined;
  let update: Uint8Array | undefined;
  try {
    Y.applyUpdate(scratch, Y.encodeStateAsUpdate(store.doc));
    // The scratch doc's roots must have the store's types, or replaceData would see them as generic.
    for (const [name, type] of store.doc.share) if (type.constructor !== Y.AbstractType) defineRootLike(scratch, name, type);
    const before = Y.encodeStateVector(scratch);
    scratch.transact(() => {
      problem = replaceData(scratch, write.type, contentKey, write.data);
    });
    if (problem === undefined) update = Y.encodeStateAsUpdate(scratch, before);
  } catch (error) {
    throw invalidArgument('data cannot be stored as CRDT content (too deeply nested or too large)', { cause: error });
  } finally {
    scratch.destroy();
  }
  if (problem !== undefined) throw invalidArgument(problem);
  return { contentKey, update };
}

/** Instantiates `name` on `doc` with the constructor it has on the source doc. */
function defineRootLike(doc: Y.Doc, name: string, type: object): void {
  if (type instanceof Y.Text) doc.getText(name);
  else if (type instanceof Y.Map) doc.getMap(name);
  else if (type instanceof Y.Array) doc.getArray(name);
  else if (type instanceof Y.XmlFragment) doc.getXmlFragment(name);
}
