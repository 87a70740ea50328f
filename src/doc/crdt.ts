// Owns store root types <-> JSON for the REST CRDT operations: reading, and replacing content with minimal Yjs ops.
import { isDeepStrictEqual } from 'node:util';
import * as Y from 'yjs';
import { dict } from '../dict.js';
import type { StoreType } from '../store/snapshots.js';
import { parseXml, serializeXml, toYXml } from './xml.js';

export const STORE_TYPES: readonly StoreType[] = ['text', 'map', 'array', 'xml'];
export const DEFAULT_CONTENT_KEY = 'content';

type Root = Y.Text | Y.Map<unknown> | Y.Array<unknown> | Y.XmlFragment;

const CONSTRUCTORS = { text: Y.Text, map: Y.Map, array: Y.Array, xml: Y.XmlFragment } as const;

/** Upstream's wording for a type/data mismatch (upstream notes 2.20); undefined when `data` fits `type`. */
export function dataMismatch(type: StoreType, data: unknown): string | undefined {
  switch (type) {
    case 'text':
      return typeof data === 'string' ? undefined : 'Data must be a string for type text.';
    case 'xml':
      return typeof data === 'string' ? undefined : 'Data must be a string for type xml.';
    case 'map':
      return typeof data === 'object' && data !== null && !Array.isArray(data) ? undefined : 'Data must be an object for type map.';
    case 'array':
      return Array.isArray(data) ? undefined : 'Data must be an array for type array.';
  }
}

/** The type a root was defined with; null when not defined yet or defined only by a remote update (generic). */
function definedType(doc: Y.Doc, contentKey: string): StoreType | null {
  const root = doc.share.get(contentKey);
  if (root === undefined || root.constructor === Y.AbstractType) return null;
  return STORE_TYPES.find((type) => root.constructor === CONSTRUCTORS[type]) ?? null;
}

/** True when `contentKey` can be used as `type` (undefined, generic, or already that type). */
export function rootAccepts(doc: Y.Doc, type: StoreType, contentKey: string): boolean {
  const root = doc.share.get(contentKey);
  return root === undefined || root.constructor === Y.AbstractType || root.constructor === CONSTRUCTORS[type];
}

function root(doc: Y.Doc, type: StoreType, contentKey: string): Root {
  switch (type) {
    case 'text':
      return doc.getText(contentKey);
    case 'map':
      return doc.getMap(contentKey);
    case 'array':
      return doc.getArray(contentKey);
    case 'xml':
      return doc.getXmlFragment(contentKey);
  }
}

/**
 * Guesses the type of a root defined only by remote updates (a client that connected without `?type=`),
 * from its content: map entries, text runs, XML children, or anything else (array).
 */
export function inferType(doc: Y.Doc, contentKey: string): StoreType | null {
  const defined = definedType(doc, contentKey);
  if (defined !== null) return defined;
  const generic = doc.share.get(contentKey);
  if (generic === undefined) return null;
  if (generic._map.size > 0) return 'map';
  for (let item = generic._start; item !== null; item = item.right) {
    if (item.deleted) continue;
    const content = item.content;
    if (content instanceof Y.ContentString || content instanceof Y.ContentFormat || content instanceof Y.ContentEmbed) return 'text';
    if (content instanceof Y.ContentType) {
      const child = content.type;
      return child instanceof Y.XmlElement || child instanceof Y.XmlText || child instanceof Y.XmlHook ? 'xml' : 'array';
    }
    return 'array';
  }
  return null;
}

/** The store's content as JSON: text -> string, map -> object, array -> array, xml -> XML string. */
export function readData(doc: Y.Doc, type: StoreType | null, contentKey: string): unknown {
  const actual = definedType(doc, contentKey) ?? type ?? inferType(doc, contentKey) ?? 'text';
  const value = root(doc, actual, contentKey);
  if (value instanceof Y.XmlFragment) return serializeXml(value);
  return value instanceof Y.Text ? value.toString() : toJson(value);
}

/**
 * Y.Map#toJSON assigns keys on a `{}`, so a key named `__proto__` would set the prototype and vanish from the
 * reply: maps become null-prototype records, which JSON.stringify writes like any object.
 */
function toJson(value: unknown): unknown {
  if (value instanceof Y.Map) {
    const out = dict<unknown>();
    for (const [key, child] of value.entries()) out[key] = toJson(child);
    return out;
  }
  if (value instanceof Y.Array) return value.toArray().map(toJson);
  if (value instanceof Y.AbstractType) return value.toJSON() as unknown;
  return value;
}

/**
 * Replaces the root's content with `data` using the smallest edit this can find (common prefix and suffix kept),
 * so concurrent client edits outside the changed span survive and every replica converges. Call inside a
 * transaction. Returns an error message instead of changing anything when the data does not fit.
 */
export function replaceData(doc: Y.Doc, type: StoreType, contentKey: string, data: unknown): string | undefined {
  const mismatch = dataMismatch(type, data);
  if (mismatch !== undefined) return mismatch;
  if (!rootAccepts(doc, type, contentKey)) return `the root "${contentKey}" of this store is not of type ${type}`;
  if (type === 'xml') {
    const parsed = parseXml(data as string);
    if (!parsed.ok) return `data is not well-formed XML: ${parsed.error}`;
    const fragment = doc.getXmlFragment(contentKey);
    // XML trees have no cheap minimal diff; replacing the children is still a real Yjs edit clients converge on.
    fragment.delete(0, fragment.length);
    fragment.insert(0, toYXml(parsed.nodes));
    return undefined;
  }
  if (type === 'text') replaceText(doc.getText(contentKey), data as string);
  else if (type === 'map') replaceMap(doc.getMap(contentKey), data as Record<string, unknown>);
  else replaceArray(doc.getArray(contentKey), data as unknown[]);
  return undefined;
}

const isHigh = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

function replaceText(text: Y.Text, next: string): void {
  const current = text.toString();
  let start = 0;
  while (start < current.length && start < next.length && current[start] === next[start]) start++;
  // Never cut a surrogate pair: Yjs counts UTF-16 units and a lone half would corrupt the character.
  if (start > 0 && isHigh(current.charCodeAt(start - 1))) start--;
  let end = 0;
  while (end < current.length - start && end < next.length - start && current[current.length - 1 - end] === next[next.length - 1 - end]) end++;
  if (end > 0 && isLow(current.charCodeAt(current.length - end))) end--;
  const removed = current.length - start - end;
  if (removed > 0) text.delete(start, removed);
  const inserted = next.slice(start, next.length - end);
  if (inserted.length > 0) text.insert(start, inserted);
}

const plain = (value: unknown): unknown => (value instanceof Y.AbstractType ? (value.toJSON() as unknown) : value);

function replaceMap(map: Y.Map<unknown>, next: Record<string, unknown>): void {
  for (const key of [...map.keys()]) if (!Object.hasOwn(next, key)) map.delete(key);
  for (const [key, value] of Object.entries(next)) {
    if (!map.has(key) || !isDeepStrictEqual(plain(map.get(key)), value)) map.set(key, value);
  }
}

function replaceArray(array: Y.Array<unknown>, next: unknown[]): void {
  const current = array.toArray().map(plain);
  let start = 0;
  while (start < current.length && start < next.length && isDeepStrictEqual(current[start], next[start])) start++;
  let end = 0;
  while (
    end < current.length - start &&
    end < next.length - start &&
    isDeepStrictEqual(current[current.length - 1 - end], next[next.length - 1 - end])
  ) {
    end++;
  }
  const removed = current.length - start - end;
  if (removed > 0) array.delete(start, removed);
  const inserted = next.slice(start, next.length - end);
  if (inserted.length > 0) array.insert(start, inserted);
}

/** Instantiates the root a connecting client named with `?type=`; false when the root already has another type. */
export function defineRoot(doc: Y.Doc, type: StoreType, contentKey: string): boolean {
  if (!rootAccepts(doc, type, contentKey)) return false;
  root(doc, type, contentKey);
  return true;
}
