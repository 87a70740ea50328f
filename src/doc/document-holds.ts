// Owns which documents are held while work runs on them (a migration re-keying, a delete removing): acquirers wait.
import { AppError } from '../errors.js';
import { documentKeyString, type DocumentKey } from '../document-key.js';

/** What holds it: a migration (`DocumentActors.exclusively`) or a delete (`DocumentActors.whileDeleting`). */
export type HoldKind = 'migration' | 'delete';

/** How a hold ended: `deleted` once a delete's work has finished; a failed delete keeps its documents (retried). */
export type HoldEnd = 'kept' | 'deleted';

/** What a hold covers: documents by key, and whole organizations (every document of theirs, loaded or not, known or not). */
export interface HoldScope {
  readonly documents?: readonly DocumentKey[];
  readonly organizations?: ReadonlyArray<{ readonly apiKey: string; readonly organizationId: string }>;
}

export interface Hold {
  readonly kind: HoldKind;
  readonly ended: Promise<HoldEnd>;
}

interface Active extends Hold {
  readonly ids: ReadonlySet<string>;
  /** The organizations held whole. */
  readonly organizations: ReadonlySet<string>;
  /** The organizations of the documents held by key. */
  readonly documentOrganizations: ReadonlySet<string>;
}

/** Whether two sets share an item (walks the smaller). */
function meets(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  const [small, large] = a.size < b.size ? [a, b] : [b, a];
  for (const item of small) if (large.has(item)) return true;
  return false;
}

const organizationString = (apiKey: string, organizationId: string): string => JSON.stringify([apiKey, organizationId]);

/** The close reason of a deleted document's connections (4404). */
export const DELETED = 'the document was deleted';

/** A sync connection that waited on a delete of its document: closed with 4404 as the connections open then were. */
export const documentDeleted = (): AppError => new AppError('NOT_FOUND', DELETED);

/** The keys of the entries that are documents of the organizations (none asked: `entries` is not walked). */
export function inOrganizations(entries: Iterable<{ readonly key: DocumentKey }>, organizations: HoldScope['organizations'] = []): DocumentKey[] {
  if (organizations.length === 0) return [];
  const wanted = new Set(organizations.map((org) => organizationString(org.apiKey, org.organizationId)));
  const keys: DocumentKey[] = [];
  for (const { key } of entries) if (wanted.has(organizationString(key.apiKey, key.organizationId))) keys.push(key);
  return keys;
}

export class DocumentHolds {
  private readonly active = new Set<Active>();
  /** By document key string and by organization: `of` is asked on every REST use of a document, so it is two lookups. */
  private readonly byId = new Map<string, Active[]>();
  private readonly byOrganization = new Map<string, Active[]>();
  private readonly waitListeners: Array<(key: DocumentKey) => void> = [];

  /** A hold on the document or on its organization, if any (`id`: its key string, when the caller has it). */
  of(key: DocumentKey, id: string = documentKeyString(key)): Hold | undefined {
    if (this.active.size === 0) return undefined;
    return this.byId.get(id)?.[0] ?? this.byOrganization.get(organizationString(key.apiKey, key.organizationId))?.[0];
  }

  /** Tells the wait listeners, then answers how the hold ended. */
  wait(key: DocumentKey, hold: Hold): Promise<HoldEnd> {
    for (const listener of this.waitListeners) listener(key);
    return hold.ended;
  }

  /** Registers a listener told each time an acquirer starts waiting on a hold (tests: the moment a racing call is parked). */
  onWait(listener: (key: DocumentKey) => void): void {
    this.waitListeners.push(listener);
  }

  /**
   * Runs `work` with `scope` held; `settle` runs after it, while the scope is still held. A delete first waits until no
   * hold overlaps its scope; a migration only for deletes (a migration's job takes over the hold its start took on the
   * same ids, `src/doc/migration.ts`). Either takes all of its scope at once after its waits (nothing is held while
   * waiting), so two deletes, or a delete and a migration, never wait on each other in a cycle. With nothing to wait
   * for, the scope is held before the first await (a part-moved document is held from the server's start).
   */
  async run<T>(kind: HoldKind, scope: HoldScope, work: () => Promise<T>, settle: () => void = () => undefined): Promise<T> {
    const documents = scope.documents ?? [];
    const organizations = scope.organizations ?? [];
    const wanted = {
      ids: new Set(documents.map((key) => documentKeyString(key))),
      organizations: new Set(organizations.map((org) => organizationString(org.apiKey, org.organizationId))),
      documentOrganizations: new Set(documents.map((key) => organizationString(key.apiKey, key.organizationId))),
    };
    for (let blocking = this.blocking(kind, wanted); blocking !== undefined; blocking = this.blocking(kind, wanted)) await blocking.ended;
    let end = (_how: HoldEnd): void => undefined;
    const hold: Active = { kind, ended: new Promise<HoldEnd>((resolve) => (end = resolve)), ...wanted };
    this.add(hold);
    let how: HoldEnd = 'kept';
    try {
      const result = await work();
      if (kind === 'delete') how = 'deleted';
      return result;
    } finally {
      try {
        settle();
      } finally {
        this.remove(hold);
        end(how);
      }
    }
  }

  /** An active hold overlapping `wanted` that a hold of `kind` must wait for. */
  private blocking(kind: HoldKind, wanted: Omit<Active, keyof Hold>): Active | undefined {
    for (const held of this.active) {
      if (kind === 'migration' && held.kind === 'migration') continue;
      if (meets(held.ids, wanted.ids) || meets(held.organizations, wanted.organizations)) return held;
      if (meets(held.organizations, wanted.documentOrganizations) || meets(held.documentOrganizations, wanted.organizations)) return held;
    }
    return undefined;
  }

  private add(hold: Active): void {
    this.active.add(hold);
    for (const id of hold.ids) this.byId.set(id, [...(this.byId.get(id) ?? []), hold]);
    for (const org of hold.organizations) this.byOrganization.set(org, [...(this.byOrganization.get(org) ?? []), hold]);
  }

  private remove(hold: Active): void {
    this.active.delete(hold);
    const drop = (index: Map<string, Active[]>, key: string): void => {
      const left = (index.get(key) ?? []).filter((other) => other !== hold);
      if (left.length === 0) index.delete(key);
      else index.set(key, left);
    };
    for (const id of hold.ids) drop(this.byId, id);
    for (const org of hold.organizations) drop(this.byOrganization, org);
  }
}
