// Owns joining one client's consecutive updates into one Yjs update by their bytes, without decoding their contents.
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { updateSections, updateShape, type UpdateShape } from './update-check.js';

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
  /** The last update with structs so far. */
  let last: UpdateShape | undefined;
  for (const update of updates) {
    const shape = updateShape(update);
    if (shape === undefined || !follows(last, shape)) return undefined;
    if (shape.client !== undefined) last = shape;
    shapes.push(shape);
  }
  return join(updates, shapes, 0, updates.length);
}

/**
 * `updates` (in order) as few updates as concatUpdates can make of them: each longest run of consecutive updates it can
 * join becomes one update, and the others stay as they are, in their place. A store's log tail, mostly the runs of
 * its editors' local transactions, is applied so at a load: applying a joined run decodes one update where applying its
 * entries decoded each: for a 200-entry tail, a fifth less time and two fifths less garbage
 * (bench/README.md, "Twenty-first session: cold open of small documents").
 */
export function concatRuns(updates: readonly Uint8Array[]): Uint8Array[] {
  const runs: Uint8Array[] = [];
  const shapes: UpdateShape[] = [];
  /** The current run is updates[from..i), whose shapes are `shapes`; `last` is its last update with structs. */
  let from = 0;
  let last: UpdateShape | undefined;
  const close = (to: number): void => {
    if (to - from === 1) runs.push(updates[from] as Uint8Array);
    else if (to > from) runs.push(join(updates, shapes, from, to));
    from = to;
    shapes.length = 0;
    last = undefined;
  };
  for (let i = 0; i < updates.length; i++) {
    const shape = updateShape(updates[i] as Uint8Array);
    if (shape === undefined) {
      // Not one client's structs (several clients, say): left for Yjs as it is.
      close(i);
      runs.push(updates[i] as Uint8Array);
      from = i + 1;
      continue;
    }
    if (!follows(last, shape)) close(i);
    if (shape.client !== undefined) last = shape;
    shapes.push(shape);
  }
  close(updates.length);
  return runs;
}

/**
 * One Yjs V1 update holding `state` (any update: a snapshot of several clients) and then `run` (one client's structs or
 * none, as concatRuns makes), by their bytes; undefined when they cannot simply be joined (bytes that do not decode,
 * structs that do not start where the state's of their client end). The run's structs go at the end of their client's
 * part of the state, or in a part of their own ahead of the others (Yjs reads the parts in any order), and the delete
 * sets are merged. A store loaded from a snapshot and a tail of one run answers its first joiner with this, where
 * encoding the loaded doc again cost as much as a tenth of the cold open's server time (bench/README.md, "Twenty-first
 * session: cold open of small documents").
 */
export function appendRun(state: Uint8Array, run: Uint8Array): Uint8Array | undefined {
  const parts = updateSections(state);
  const shape = updateShape(run);
  if (parts === undefined || shape === undefined) return undefined;
  const own = shape.client === undefined ? -1 : parts.sections.findIndex((section) => section.client === shape.client);
  const section = parts.sections[own];
  if (section !== undefined && section.clock + section.length !== shape.clock) return undefined;
  const encoder = encoding.createEncoder();
  const runStructs = run.subarray(shape.structsStart, shape.deletesStart);
  encoding.writeVarUint(encoder, parts.sections.length + (shape.client !== undefined && section === undefined ? 1 : 0));
  if (shape.client !== undefined && section === undefined) {
    encoding.writeVarUint(encoder, shape.structs);
    encoding.writeVarUint(encoder, shape.client);
    encoding.writeVarUint(encoder, shape.clock);
    encoding.writeUint8Array(encoder, runStructs);
  }
  for (const part of parts.sections) {
    if (part !== section) {
      encoding.writeUint8Array(encoder, state.subarray(part.start, part.end));
      continue;
    }
    encoding.writeVarUint(encoder, part.structs + shape.structs);
    encoding.writeVarUint(encoder, part.client);
    encoding.writeVarUint(encoder, part.clock);
    encoding.writeUint8Array(encoder, state.subarray(part.structsStart, part.end));
    encoding.writeUint8Array(encoder, runStructs);
  }
  // The state's delete set read as writeDeletes reads an update's: where it starts and ends, how many clients it names.
  const stateDeletes: UpdateShape = { client: undefined, clock: 0, length: 0, structs: 0, structsStart: parts.deletesStart, deletesStart: parts.deletesStart, end: parts.end, deleting: parts.deleting };
  writeDeletes(encoder, [state, run], [stateDeletes, shape]);
  return encoding.toUint8Array(encoder);
}

/** Whether an update of `shape` can follow a run whose last update with structs is `last` (none yet: undefined). */
function follows(last: UpdateShape | undefined, shape: UpdateShape): boolean {
  return shape.client === undefined || last === undefined || (shape.client === last.client && shape.clock === last.clock + last.length);
}

/** updates[from..to) joined into one update; `shapes` are theirs, from shapes[0], and they follow each other. */
function join(updates: readonly Uint8Array[], shapes: readonly UpdateShape[], from: number, to: number): Uint8Array {
  const count = to - from;
  const part = updates.slice(from, to);
  /** The first update with structs: the joined update starts at its client and clock. */
  let first: UpdateShape | undefined;
  let structs = 0;
  for (let i = 0; i < count; i++) {
    const shape = shapes[i] as UpdateShape;
    first ??= shape.client === undefined ? undefined : shape;
    structs += shape.structs;
  }
  const encoder = encoding.createEncoder();
  if (first?.client === undefined) encoding.writeVarUint(encoder, 0);
  else {
    encoding.writeVarUint(encoder, 1);
    encoding.writeVarUint(encoder, structs);
    encoding.writeVarUint(encoder, first.client);
    encoding.writeVarUint(encoder, first.clock);
  }
  for (let i = 0; i < count; i++) {
    const shape = shapes[i] as UpdateShape;
    encoding.writeUint8Array(encoder, (part[i] as Uint8Array).subarray(shape.structsStart, shape.deletesStart));
  }
  writeDeletes(encoder, part, shapes);
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
