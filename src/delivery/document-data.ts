// Owns what the delivery room holds about a document or organization being deleted: notifications, activity logs, preferences, pending deliveries.
import type { Database, Key } from 'lmdb';
import type { DocumentKey } from '../document-key.js';
import type { Outbox } from '../events/outbox.js';
import { inWriteBatches, pageMatches, removeRangeInBatches } from '../store/chunked-scan.js';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { DocumentDataOwner } from '../tenant/directory/data-owners.js';
import type { ActivityStore } from './activity-store.js';
import type { Endpoints } from './endpoints.js';
import type { NotificationRecord, NotificationStore } from './notification-store.js';
import type { DeliveryJob, DeliveryQueue } from './queue.js';

/** What one deletion removed or cancelled, by kind. */
export interface DeliveryDataRemoved {
  notifications: number;
  activities: number;
  preferences: number;
  events: number;
  cancelled: number;
}

/** The part of a per-user batch payload this module reads (src/delivery/channels/notification.ts writes it). */
interface UserBatchPayload {
  readonly kind: 'batch';
  readonly scope: 'document' | 'user';
  readonly organizationId: string;
  readonly items: ReadonlyArray<{ readonly documentId: string }>;
}

interface AdvancedPayload {
  readonly endpointId: string;
  readonly messageId: string;
}

const DOCUMENT_DELETED = 'its document was deleted';
const ORGANIZATION_DELETED = 'its organization was deleted';

/**
 * A DocumentDataOwner (registered last, after the actors are drained, so their last events are in the outbox). Nothing
 * more is sent about a deleted document: its in-app notifications, activity logs (immutable ones too) and per-document
 * notification preferences are removed, its events not yet dispatched are dropped, and its pending deliveries on every
 * channel are cancelled, in batches of bounded transactions (`deleteDocuments`, `deleteOrganization`).
 * docs/choices.md, "Deletion", says why.
 */
export class DeliveryDocumentData implements DocumentDataOwner {
  private readonly prefs: Database<unknown, Key>;

  constructor(
    private readonly deps: {
      readonly store: Store;
      readonly outbox: Outbox;
      readonly queue: DeliveryQueue;
      readonly endpoints: Endpoints;
      readonly notifications: NotificationStore;
      readonly activities: ActivityStore;
      readonly now: () => number;
    },
  ) {
    this.prefs = deps.store.records<unknown>(DB.notificationPrefs);
  }

  async deleteDocumentData(ref: DocumentKey): Promise<void> {
    await this.deleteDocuments([ref]);
  }

  /** Many documents at once (a folder): one scan of each organization's rows instead of one per document. */
  async deleteDocumentsData(refs: readonly DocumentKey[]): Promise<void> {
    await this.deleteDocuments(refs);
  }

  async deleteOrganizationData(apiKey: string, organizationId: string): Promise<void> {
    await this.deleteOrganization(apiKey, organizationId);
  }

  /**
   * Everything about the documents; answers what went. Finding their notifications, logs and preferences means reading
   * every one of the organization (none is keyed by document), so that is done outside any transaction, 1,000 rows
   * between turns of the event loop (src/store/chunked-scan.ts); what was found is then removed WRITE_BATCH to a
   * transaction, each record re-read in its transaction, and the last one drops the documents' events and cancels
   * their pending deliveries. A notification written about a document while its deletion scans may stay (behind the
   * cursor), as one written just after the deletion always could: the directory entry goes only after every owner.
   */
  async deleteDocuments(refs: readonly DocumentKey[]): Promise<DeliveryDataRemoved> {
    const byOrganization = new Map<string, { apiKey: string; organizationId: string; documents: Set<string> }>();
    for (const ref of refs) {
      const id = JSON.stringify([ref.apiKey, ref.organizationId]);
      let entry = byOrganization.get(id);
      if (entry === undefined) byOrganization.set(id, (entry = { apiKey: ref.apiKey, organizationId: ref.organizationId, documents: new Set() }));
      entry.documents.add(ref.documentId);
    }
    const deleted = (apiKey: string, organizationId: string, documentId: string | undefined): boolean =>
      documentId !== undefined && byOrganization.get(JSON.stringify([apiKey, organizationId]))?.documents.has(documentId) === true;
    const removed: DeliveryDataRemoved = { notifications: 0, activities: 0, preferences: 0, events: 0, cancelled: 0 };
    for (const { apiKey, organizationId, documents } of byOrganization.values()) {
      const { notifications, activities } = this.deps;
      const about = (record: { metadata: { documentId: string } }): boolean => documents.has(record.metadata.documentId);
      const notes = await notifications.pageOfAll(apiKey, undefined, Infinity, (_key, n) => (about(n) || batchMentions(n, documents) ? n.id : undefined), organizationId);
      // NotificationStore.removeEach batches the same way; activities cannot use theirs, which keeps `immutable` ones.
      removed.notifications += Object.values(await notifications.removeEach(apiKey, organizationId, notes.items)).filter(Boolean).length;
      const logs = await activities.pageOfAll(apiKey, undefined, Infinity, (_key, a) => (about(a) ? a.id : undefined), organizationId);
      removed.activities += await inWriteBatches(this.deps.store, logs.items, (tx, id) => {
        const value = activities.get(apiKey, organizationId, id);
        if (value !== undefined) activities.remove(tx, value);
        return value !== undefined;
      });
      // [apiKey, organizationId, userId, documentId or '']: the organization-level ('') ones stay.
      const prefs = await pageMatches(this.prefs, [apiKey, organizationId], undefined, Infinity, (key) => {
        const documentId = (key as unknown[])[3];
        return typeof documentId === 'string' && documents.has(documentId) ? key : undefined;
      });
      removed.preferences += await inWriteBatches(this.deps.store, prefs.items, (_tx, key) => this.prefs.removeSync(key));
    }
    return this.deps.store.transaction((tx) => {
      removed.events = this.deps.outbox.removeWhere(tx, new Set(refs.map((ref) => ref.apiKey)), (event) => deleted(event.apiKey, event.organizationId, event.documentId));
      const now = this.deps.now();
      for (const job of this.deps.queue.pending(new Set(refs.map((ref) => ref.apiKey)))) {
        if (job.organizationId === undefined) continue;
        if (deleted(job.apiKey, job.organizationId, job.documentId)) {
          this.cancel(tx, job, DOCUMENT_DELETED, now);
          removed.cancelled++;
          continue;
        }
        if (job.documentId === undefined && this.trimUserBatch(tx, job, (documentId) => deleted(job.apiKey, job.organizationId ?? '', documentId), now)) removed.cancelled++;
      }
      return removed;
    });
  }

  /**
   * Everything of the organization; its ranges go whole, REMOVE_BATCH rows to a transaction (src/store/chunked-scan.ts),
   * then its outbox events and pending jobs in one last transaction. A crash part-way leaves the directory entry (it
   * goes after every owner), so the retried delete finishes the job.
   */
  async deleteOrganization(apiKey: string, organizationId: string): Promise<DeliveryDataRemoved> {
    const notifications = await this.deps.notifications.removeOrganization(apiKey, organizationId);
    const activities = await this.deps.activities.removeOrganization(apiKey, organizationId);
    const preferences = await removeRangeInBatches(this.deps.store, [this.prefs], [apiKey, organizationId]);
    return this.deps.store.transaction((tx) => {
      const removed: DeliveryDataRemoved = {
        notifications,
        activities,
        preferences,
        events: this.deps.outbox.removeWhere(tx, new Set([apiKey]), (event) => event.organizationId === organizationId),
        cancelled: 0,
      };
      const now = this.deps.now();
      for (const job of this.deps.queue.pending(new Set([apiKey]))) {
        if (job.organizationId !== organizationId) continue;
        this.cancel(tx, job, ORGANIZATION_DELETED, now);
        removed.cancelled++;
      }
      return removed;
    });
  }

  /**
   * A per-user batch loses the items of deleted documents; one left empty is cancelled (answers true). The
   * batch's notification, when it flushes, is then about the remaining documents only.
   */
  private trimUserBatch(tx: WriteTx, job: DeliveryJob, deleted: (documentId: string) => boolean, now: number): boolean {
    if (job.channel !== 'notification') return false;
    const payload = job.payload as UserBatchPayload;
    if (payload.kind !== 'batch' || payload.scope !== 'user') return false;
    const items = payload.items.filter((item) => !deleted(item.documentId));
    if (items.length === payload.items.length) return false;
    if (items.length === 0) {
      this.cancel(tx, job, DOCUMENT_DELETED, now);
      return true;
    }
    this.deps.queue.replace(tx, { ...job, updatedAt: now, payload: { ...payload, items } });
    return false;
  }

  /** An advanced webhook message that will not be sent says so in the endpoint's message log. */
  private cancel(tx: WriteTx, job: DeliveryJob, reason: string, now: number): void {
    this.deps.queue.cancel(tx, job, reason, now);
    if (job.channel !== 'advancedWebhook') return;
    const { endpointId, messageId } = job.payload as AdvancedPayload;
    const message = this.deps.endpoints.message(job.apiKey, endpointId, messageId);
    if (message !== undefined && message.status === 'pending') this.deps.endpoints.putMessage(tx, job.apiKey, { ...message, status: 'fail' });
  }
}

/** A per-user batch notification lists items of several documents; one naming a deleted document goes with it. */
function batchMentions(record: NotificationRecord, documents: ReadonlySet<string>): boolean {
  const source = record.notificationSourceData;
  if (typeof source !== 'object' || source === null || !('batch' in source)) return false;
  const batch: unknown = source.batch;
  if (typeof batch !== 'object' || batch === null || !('items' in batch) || !Array.isArray(batch.items)) return false;
  return batch.items.some((item: unknown) => typeof item === 'object' && item !== null && 'documentId' in item && typeof item.documentId === 'string' && documents.has(item.documentId));
}
