// Owns who an event concerns: mentioned users, the assignee and the thread's participants, never the actor.
import { commentData } from './comment-event.js';
import type { UserRef } from '../doc/annotations/model.js';
import { ERASED_USER } from '../doc/user-data.js';
import type { StampedEvent } from '../events/types.js';

export interface Recipient {
  readonly userId: string;
  readonly name?: string;
  readonly email?: string;
  /** Why: the strongest reason wins (mention > assignee > participant). */
  readonly reason: 'mention' | 'assignee' | 'participant';
}

const RANK: Record<Recipient['reason'], number> = { mention: 3, assignee: 2, participant: 1 };

export function recipientsOf(event: StampedEvent): Recipient[] {
  const data = commentData(event);
  const actor = data.actionUser?.userId;
  const found = new Map<string, Recipient>();
  const add = (user: { userId: string; name?: string | undefined; email?: string | undefined } | undefined, reason: Recipient['reason']): void => {
    // The placeholder a GDPR erase leaves in threads is nobody to tell (its own rewrite raises update events).
    if (user === undefined || user.userId === '' || user.userId === actor || user.userId === ERASED_USER.userId) return;
    const previous = found.get(user.userId);
    const email = user.email ?? previous?.email;
    const name = user.name ?? previous?.name;
    const strongest = previous !== undefined && RANK[previous.reason] >= RANK[reason] ? previous.reason : reason;
    found.set(user.userId, { userId: user.userId, reason: strongest, ...(name === undefined ? {} : { name }), ...(email === undefined ? {} : { email }) });
  };
  const annotation = data.commentAnnotation;
  add(userOf(annotation.from), 'participant');
  for (const comment of annotation.comments ?? []) {
    add(userOf(comment.from), 'participant');
    for (const tag of comment.taggedUserContacts ?? []) {
      add({ userId: tag.userId || tag.contact.userId, name: tag.contact.name, email: tag.contact.email }, 'mention');
    }
  }
  add(userOf(annotation.assignedTo), 'assignee');
  return [...found.values()].sort((a, b) => a.userId.localeCompare(b.userId));
}

function userOf(user: UserRef | undefined): { userId: string; name?: string; email?: string } | undefined {
  if (user === undefined) return undefined;
  return {
    userId: user.userId,
    ...(typeof user.name === 'string' ? { name: user.name } : {}),
    ...(typeof user.email === 'string' && user.email !== '' ? { email: user.email } : {}),
  };
}
