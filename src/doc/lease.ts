// Owns the lease that keeps a document actor loaded while a use of it spans an await.
import type { DocumentActor } from './actor.js';

/** Keeps an actor loaded until released; take one for every use that spans an await. */
export interface Lease {
  readonly actor: DocumentActor;
  /** Idempotent. */
  release(): void;
}

/** A lease as an object of its own, not a closure capturing `released` and the actor: one small object per lease. */
export class ActorLease implements Lease {
  private released = false;

  constructor(readonly actor: DocumentActor) {
    actor.leases++;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.actor.leases--;
    this.actor.checkIdle();
  }
}
