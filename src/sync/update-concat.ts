// Owns joining one client's consecutive updates into one Yjs update by their bytes, without decoding their contents.
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { updateShape, type UpdateShape } from './update-check.js';

/**
 * One Yjs V1 update holding everything in `updates`, or undefined when their bytes cannot simply be joined. They can
 * when each is one client's structs or none (a client's local transaction is), all of the same client, each starting
 * at the clock where the one before with structs ended. A V1 struct is written without reference to the structs
 * around it, and the ones of an update follow each other's clocks from the update's first, so the joined update is
 * the first one's header with every update's structs in order, then the union of their delete sets.
 * Y.mergeUpdates gives the same content (and merges neighbouring items); it decodes every struct into objects and
 * encodes them again, which cost more than applying the updates did in a sender's turn of a few small updates
 * (bench/README.md, "Tenth session"). Anything else (several clients, a gap) is left to it.
 */
export function concatUpdates(updates: readonly Uint8Array[]): Uint8Array | undefined {
  if (updates.length < 2) return undefined;
  // Each update is walked again here although its frame was walked when it came in: keeping every frame's shape
  // would cost an object per update, and only a sender's second update of a turn ever needs one.
  const shapes: UpdateShape[] = [];
  let structs = 0;
  /** The first and the last update with structs so far: the joined update starts at the first one's client and clock. */
  let first: UpdateShape | undefined;
  let last: UpdateShape | undefined;
  for (const update of updates) {
    const shape = updateShape(update);
    if (shape === undefined) return undefined;
    if (shape.client !== undefined) {
      if (last !== undefined && (shape.client !== last.client || shape.clock !== last.clock + last.length)) return undefined;
      first ??= shape;
      last = shape;
    }
    structs += shape.structs;
    shapes.push(shape);
  }
  const encoder = encoding.createEncoder();
  if (first?.client === undefined) encoding.writeVarUint(encoder, 0);
  else {
    encoding.writeVarUint(encoder, 1);
    encoding.writeVarUint(encoder, structs);
    encoding.writeVarUint(encoder, first.client);
    encoding.writeVarUint(encoder, first.clock);
  }
  for (let i = 0; i < updates.length; i++) {
    const shape = shapes[i] as UpdateShape;
    encoding.writeUint8Array(encoder, (updates[i] as Uint8Array).subarray(shape.structsStart, shape.deletesStart));
  }
  writeDeletes(encoder, updates, shapes);
  return encoding.toUint8Array(encoder);
}

/**
 * The joined update's delete set: none, the one update's bytes as they are, or the updates' sets merged as Yjs
 * merges them (mergeDeleteSets: one entry per client, higher clients first, ranges by clock with overlapping and
 * adjacent ones joined). A set is numbers only, so reading them is cheap.
 */
function writeDeletes(encoder: encoding.Encoder, updates: readonly Uint8Array[], shapes: readonly UpdateShape[]): void {
  const deleting = shapes.flatMap((shape, i) => (shape.deleting > 0 ? [i] : []));
  if (deleting.length === 0) {
    encoding.writeVarUint(encoder, 0);
    return;
  }
  if (deleting.length === 1) {
    const i = deleting[0] as number;
    const shape = shapes[i] as UpdateShape;
    encoding.writeUint8Array(encoder, (updates[i] as Uint8Array).subarray(shape.deletesStart, shape.end));
    return;
  }
  // By client: [clock, length, clock, length, …], joined as they come while they come in order of clock (a client's
  // later updates mostly delete later clocks, as a map's overwritten entries are); sorted at the end otherwise.
  const ranges = new Map<number, number[]>();
  let unsorted = false;
  for (const i of deleting) {
    const shape = shapes[i] as UpdateShape;
    const decoder = decoding.createDecoder((updates[i] as Uint8Array).subarray(shape.deletesStart, shape.end));
    for (let clients = decoding.readVarUint(decoder); clients > 0; clients--) {
      const client = decoding.readVarUint(decoder);
      let list = ranges.get(client);
      if (list === undefined) ranges.set(client, (list = []));
      for (let count = decoding.readVarUint(decoder); count > 0; count--) {
        const clock = decoding.readVarUint(decoder);
        const length = decoding.readVarUint(decoder);
        unsorted = addRange(list, clock, length) || unsorted;
      }
    }
  }
  encoding.writeVarUint(encoder, ranges.size);
  for (const [client, list] of ranges.size === 1 ? ranges : [...ranges].sort((a, b) => b[0] - a[0])) {
    const merged = unsorted ? sortRanges(list) : list;
    encoding.writeVarUint(encoder, client);
    encoding.writeVarUint(encoder, merged.length / 2);
    for (const value of merged) encoding.writeVarUint(encoder, value);
  }
}

/** Appends a range to a flat list, joined with the last one when they overlap or touch; true when it came out of order. */
function addRange(list: number[], clock: number, length: number): boolean {
  const last = list.length - 2;
  if (last < 0 || clock > (list[last] as number) + (list[last + 1] as number)) {
    list.push(clock, length);
    return false;
  }
  if (clock < (list[last] as number)) {
    list.push(clock, length);
    return true;
  }
  list[last + 1] = Math.max(list[last + 1] as number, clock + length - (list[last] as number));
  return false;
}

/** A flat list of ranges sorted by clock, overlapping and touching ones joined (Yjs's sortAndMergeDeleteSet). */
function sortRanges(list: readonly number[]): number[] {
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < list.length; i += 2) pairs.push([list[i] as number, list[i + 1] as number]);
  pairs.sort((a, b) => a[0] - b[0]);
  const merged: number[] = [];
  for (const [clock, length] of pairs) addRange(merged, clock, length);
  return merged;
}
