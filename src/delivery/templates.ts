// Owns the words of deliveries: one headline per event type, and the text and HTML email bodies built from it.
import { commentData } from './comment-event.js';
import type { EventType, OutboxEvent, StampedEvent } from '../events/types.js';
import type { Recipient } from './recipients.js';

/** `{actionUser}` and `{recipientUser}` are filled from the event (spec 2.11 single-curly template variables). */
const HEADLINES: Readonly<Record<EventType, string>> = {
  'comment_annotation.add': '{actionUser} started a comment thread',
  'comment_annotation.status_change': '{actionUser} changed the status of a thread to {status}',
  'comment_annotation.assign': '{actionUser} assigned a thread to {assignee}',
  'comment_annotation.priority_change': '{actionUser} changed the priority of a thread to {priority}',
  'comment_annotation.suggestion_accept': '{actionUser} accepted a suggestion',
  'comment_annotation.suggestion_reject': '{actionUser} rejected a suggestion',
  'comment_annotation.update': '{actionUser} updated a thread',
  'comment_annotation.delete': '{actionUser} deleted a thread',
  'comment.add': '{actionUser} commented',
  'comment.update': '{actionUser} edited a comment',
  'comment.delete': '{actionUser} deleted a comment',
  // No comment channel acts on it (they take comment events only); kept so every type has a headline.
  'crdt.update_data': '{actionUser} edited the document',
  'recorder.done': '{actionUser} added a recording',
};

export function headlineTemplate(type: EventType): string {
  return HEADLINES[type];
}

/** Values for the headline's variables; custom ones are strings, users are names. */
export function templateValues(event: StampedEvent): Record<string, string> {
  const data = commentData(event);
  return {
    actionUser: data.actionUser?.name ?? data.actionUser?.userId ?? 'Someone',
    status: data.newStatus?.name ?? data.commentAnnotation.status?.name ?? '',
    assignee: data.commentAnnotation.assignedTo?.name ?? data.commentAnnotation.assignedTo?.userId ?? 'nobody',
    priority: data.newPriority?.name ?? 'none',
  };
}

export function fill(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}

/** Activity-log templates use double curly brackets (spec 2.12). */
export function activityTemplate(type: EventType): string {
  return HEADLINES[type].replace(/\{(\w+)\}/g, '{{$1}}');
}

/** Text made safe for HTML content and attribute values (emails here and in the account-email channel, and the email link pages). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

export interface RenderedEmail {
  readonly subject: string;
  readonly text: string;
  readonly html: string;
}

export function renderEmail(event: OutboxEvent, recipient: Recipient, fromCompany: string): RenderedEmail {
  const headline = fill(HEADLINES[event.type], templateValues(event));
  const comment = commentData(event).targetComment?.commentText ?? commentData(event).commentAnnotation.comments?.at(-1)?.commentText ?? '';
  const why = recipient.reason === 'mention' ? 'You were mentioned.' : recipient.reason === 'assignee' ? 'You are the assignee.' : 'You take part in this thread.';
  const where = `Document ${event.documentId} (organization ${event.organizationId})`;
  const company = fromCompany === '' ? 'Plait' : fromCompany;
  const subject = `${headline} - ${company}`;
  const text = [`${headline}.`, comment === '' ? '' : `\n"${comment}"`, `\n${where}`, `\n${why}`].join('');
  const html = [
    `<p><strong>${escapeHtml(headline)}</strong></p>`,
    comment === '' ? '' : `<blockquote>${escapeHtml(comment)}</blockquote>`,
    `<p>${escapeHtml(where)}</p>`,
    `<p style="color:#666">${escapeHtml(why)} Sent by ${escapeHtml(company)}.</p>`,
  ].join('');
  return { subject, text, html };
}
