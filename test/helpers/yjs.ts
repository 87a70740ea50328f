// Test helper: the Yjs updates a client's edits produce, one per transaction, as a provider sends them.
import * as Y from 'yjs';

/** The updates `edits` make to `doc`, each edit its own transaction and update. */
export function updatesOf(doc: Y.Doc, edits: ReadonlyArray<(doc: Y.Doc) => void>): Uint8Array[] {
  const updates: Uint8Array[] = [];
  const capture = (update: Uint8Array): void => {
    updates.push(update);
  };
  doc.on('update', capture);
  try {
    for (const edit of edits) edit(doc);
  } finally {
    doc.off('update', capture);
  }
  return updates;
}

/** Appends each text to `doc`'s `content` text: one update per text. */
export const appendedTexts = (doc: Y.Doc, ...texts: string[]): Uint8Array[] =>
  updatesOf(
    doc,
    texts.map((text) => (target: Y.Doc) => target.getText('content').insert(target.getText('content').length, text)),
  );

/** The one update that appends `text` to `doc`'s `content` text. */
export function appendedText(doc: Y.Doc, text: string): Uint8Array {
  const [update] = appendedTexts(doc, text);
  if (update === undefined) throw new Error('the edit produced no update');
  return update;
}
