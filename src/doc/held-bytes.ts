// Owns what the loaded-documents budget counts of one loaded document: its stores, and what other modules hold beside it.
import type { DocumentActor } from './actor.js';

export class HeldBytes {
  /** What other modules hold beside each actor (its threads and presence), counted with it. */
  private readonly beside: Array<(actor: DocumentActor) => number> = [];

  /** Adds what a module holds beside each actor (`DocumentActors.measureBeside`); `measure` is asked at every lease. */
  add(measure: (actor: DocumentActor) => number): void {
    this.beside.push(measure);
  }

  /**
   * A document's bytes for the budget: its stores as stored, a small store's first answer while it holds one, and what
   * is held beside it (threads, presence, as JSON).
   */
  of(actor: DocumentActor): number {
    let bytes = actor.storedBytes + actor.answerBytes;
    for (const measure of this.beside) bytes += measure(actor);
    return bytes;
  }
}
