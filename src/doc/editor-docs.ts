// Owns the set of a document's editor docs by editor id, sized for the usual case of one.
import type { EditorDoc } from './editor-doc.js';

/**
 * A Map of editor id to store that keeps its first store in a field: most documents have one editor id, and a Map
 * for it costs ~180 bytes per loaded document. Iteration is in insertion order, as a Map's (Get CRDT Data lists it).
 */
export class EditorDocs {
  /** Undefined only when the table is empty. */
  private first: EditorDoc | undefined;
  /** The stores added after `first`, made with the second one. */
  private others: Map<string, EditorDoc> | undefined;

  get(editorId: string): EditorDoc | undefined {
    return this.first?.editorId === editorId ? this.first : this.others?.get(editorId);
  }

  /** Adds `store` under its editor id; there must not be one already. */
  add(store: EditorDoc): void {
    if (this.get(store.editorId) !== undefined) throw new Error(`a store for editor id ${store.editorId} is already loaded`);
    if (this.first === undefined) this.first = store;
    else (this.others ??= new Map()).set(store.editorId, store);
  }

  delete(editorId: string): void {
    if (this.first?.editorId !== editorId) {
      this.others?.delete(editorId);
      return;
    }
    // The oldest of the others takes the first place, so the order of the rest stays as it was.
    const next = this.others?.values().next();
    this.first = next === undefined || next.done === true ? undefined : next.value;
    if (this.first !== undefined) this.others?.delete(this.first.editorId);
    if (this.others?.size === 0) this.others = undefined;
  }

  *values(): IterableIterator<EditorDoc> {
    if (this.first !== undefined) yield this.first;
    if (this.others !== undefined) yield* this.others.values();
  }

  /** Bytes of the stores as stored (each one's last snapshot plus the log since). */
  storedBytes(): number {
    let bytes = 0;
    for (const store of this.values()) bytes += store.snapshotBytes + store.logBytes;
    return bytes;
  }

  /** Bytes of the one-time first answers the stores still hold (EditorDoc.firstAnswerBytes). */
  answerBytes(): number {
    let bytes = 0;
    for (const store of this.values()) bytes += store.firstAnswerBytes;
    return bytes;
  }

  clear(): void {
    this.first = undefined;
    this.others = undefined;
  }
}
