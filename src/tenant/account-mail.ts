// Owns asking for the account emails (owner verification, sign-in link): each request is committed with its cause and sent later by the delivery room.
import type { Store, WriteTx } from '../store/env.js';

/** What an account email is about. Its link is issued, and its message written, when it is sent. */
export type AccountEmailRequest =
  | { readonly kind: 'verify'; readonly workspaceId: string; readonly ownerEmail: string; readonly workspaceName: string }
  | { readonly kind: 'login'; readonly email: string; readonly continueUrl: string };

/** Where requests wait until they are sent (src/delivery/channels/account-email.ts: one durable delivery job each). */
export interface AccountMailQueue {
  /** Records the request in the caller's transaction. */
  add(tx: WriteTx, request: AccountEmailRequest): void;
  /** The transaction that added requests committed: the sender looks now instead of at its next scan. */
  wake(): void;
}

export class AccountMail {
  constructor(
    private readonly store: Store,
    private readonly queue: AccountMailQueue,
  ) {}

  /** The verification email of a new workspace, recorded in the transaction that creates it; call `wake` after the commit. */
  verificationIn(tx: WriteTx, workspace: { readonly id: string; readonly ownerEmail: string; readonly workspaceName: string }): void {
    this.queue.add(tx, { kind: 'verify', workspaceId: workspace.id, ownerEmail: workspace.ownerEmail, workspaceName: workspace.workspaceName });
  }

  wake(): void {
    this.queue.wake();
  }

  /**
   * Records a sign-in link request for `email`; resolves once it is committed, so a crash after the answer loses
   * nothing. Whether the address owns a workspace is looked up when the email is sent, not here: the caller's
   * answer, and the time it takes, are the same for known and unknown addresses.
   */
  async requestLoginLink(email: string, continueUrl: string): Promise<void> {
    await this.store.transaction((tx) => this.queue.add(tx, { kind: 'login', email, continueUrl }));
    this.queue.wake();
  }
}
