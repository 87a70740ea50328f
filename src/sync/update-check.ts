// Owns checking that bytes decode as a Yjs V1 update without building it (the walk Y.decodeUpdate makes, minus its objects), and the shape that walk sees.
import { isUtf8 } from 'node:buffer';

/**
 * The answer of a walk: the bytes decode (as Y.decodeUpdate would), they do not, or the walk cannot tell without
 * building what they describe (subdocument contents), which the caller then hands to Y.decodeUpdate.
 */
export type UpdateCheck = 'valid' | 'invalid' | 'unsure';

/** Thrown inside the walk only, caught at its top: a read past the end or a byte Yjs would refuse. */
class Refused extends Error {}
const refused = new Refused('not a Yjs update');
class Unsure extends Error {}
const unsure = new Unsure('decode to tell');

/** Item info bits (yjs: binary.BIT8 origin, BIT7 right origin, BIT6 parentSub, BITS5 content ref). */
const HAS_ORIGIN = 0x80;
const HAS_RIGHT_ORIGIN = 0x40;
const HAS_PARENT_SUB = 0x20;
const CONTENT_REF = 0x1f;
const SKIP = 10;

/** Content refs (yjs contentRefs). */
const CONTENT = { DELETED: 1, JSON: 2, BINARY: 3, STRING: 4, EMBED: 5, FORMAT: 6, TYPE: 7, ANY: 8, DOC: 9 } as const;
/** Type refs that carry a name (yjs typeRefs: 3 YXmlElement, 5 YXmlHook); refs above 6 do not exist. */
const XML_ELEMENT = 3;
const XML_HOOK = 5;
const LAST_TYPE_REF = 6;
/** lib0 readAny type bytes. */
const ANY = { UNDEFINED: 127, NULL: 126, INT: 125, FLOAT32: 124, FLOAT64: 123, BIGINT64: 122, FALSE: 121, TRUE: 120, STRING: 119, OBJECT: 118, ARRAY: 117, BYTES: 116 } as const;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Where an update of one client's structs keeps its parts, as src/sync/update-concat.ts joins them: the structs
 * cover clocks `clock` to `clock + length` of `client`, and the delete set starts at byte `deletesStart`.
 */
export interface UpdateShape {
  /** Undefined when the update holds no structs (it only deletes). */
  readonly client: number | undefined;
  readonly clock: number;
  /** Clock units the structs cover (an item's content length: UTF-16 units of a string, entries of a list). */
  readonly length: number;
  readonly structs: number;
  /** The first struct's first byte. */
  readonly structsStart: number;
  /** The delete set's first byte (its client count), and the byte after it. */
  readonly deletesStart: number;
  readonly end: number;
  /** Clients in the delete set (0: it deletes nothing). */
  readonly deleting: number;
}

/** One client's part of an update (what updateSections gives): its structs are bytes `structsStart` to `end`. */
export interface UpdateSection {
  readonly client: number;
  readonly clock: number;
  /** Clock units the structs cover. */
  readonly length: number;
  readonly structs: number;
  /** The section's first byte (its struct count). */
  readonly start: number;
  readonly structsStart: number;
  readonly end: number;
}

/** A bounds-checked cursor: every read past the end refuses, as lib0's readers end up doing (a throw, then caught). */
class Walk {
  pos = 0;
  /** Set by update() when the update holds exactly one client's structs. */
  shape: UpdateShape | undefined;
  /** Set by update() when recording: every client's part, in the update's order. */
  sections: UpdateSection[] | undefined;
  /** Set by update(): the delete set's first byte, and how many clients it names. */
  deletesStart = 0;
  deleting = 0;
  /** `measure`: count the clock units of what is read (content lengths), for the shape; `record`: and the sections. */
  constructor(private readonly bytes: Uint8Array, private readonly measure = false, private readonly record = false) {}

  byte(): number {
    if (this.pos >= this.bytes.length) throw refused;
    return this.bytes[this.pos++] as number;
  }

  /** lib0 readVarUint: 7 bits a byte; a value past 2^53 is refused (lib0 throws there too). */
  varUint(): number {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = this.byte();
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
      if (value > Number.MAX_SAFE_INTEGER || scale > 2 ** 63) throw refused;
    }
  }

  /** lib0 readVarInt: sign and 6 bits in the first byte, then 7 bits a byte. */
  varInt(): void {
    let byte = this.byte();
    let value = byte & 0x3f;
    let scale = 64;
    while (byte >= 0x80) {
      byte = this.byte();
      value += (byte & 0x7f) * scale;
      scale *= 128;
      if (byte >= 0x80 && value > Number.MAX_SAFE_INTEGER) throw refused;
    }
  }

  skip(length: number): void {
    if (length > this.bytes.length - this.pos) throw refused;
    this.pos += length;
  }

  /** lib0 readVarUint8Array. */
  varBytes(): void {
    this.skip(this.varUint());
  }

  /**
   * lib0 readVarString: UTF-8 that lib0's fatal TextDecoder accepts. Measuring, it returns the string's length in
   * UTF-16 units as the decoded string would have it (a byte that starts a character counts one, a four-byte
   * character two); otherwise 0.
   */
  varString(): number {
    const length = this.varUint();
    const start = this.pos;
    this.skip(length);
    // Short ASCII (most keys and typed text) needs no call into native code.
    if (length <= 64) {
      let ascii = true;
      for (let i = start; i < this.pos; i++) if ((this.bytes[i] as number) >= 0x80) ascii = false;
      if (ascii) return length;
    }
    if (!isUtf8(this.bytes.subarray(start, this.pos))) throw refused;
    if (!this.measure) return 0;
    let units = 0;
    for (let i = start; i < this.pos; i++) {
      const byte = this.bytes[i] as number;
      if (byte < 0x80 || byte >= 0xc0) units += byte >= 0xf0 ? 2 : 1;
    }
    return units;
  }

  /** A string that must be JSON (ContentJSON entries, embeds, format values): parsed, as Yjs parses it. */
  json(allowUndefined: boolean): void {
    const length = this.varUint();
    const start = this.pos;
    this.skip(length);
    const text = decode(this.bytes.subarray(start, this.pos));
    if (allowUndefined && text === 'undefined') return;
    try {
      JSON.parse(text);
    } catch {
      // A SyntaxError: Yjs's JSON.parse would throw on the same text, so the update does not decode.
      throw refused;
    }
  }

  /** lib0 readAny. */
  anyValue(): void {
    switch (this.byte()) {
      case ANY.UNDEFINED:
      case ANY.NULL:
      case ANY.FALSE:
      case ANY.TRUE:
        return;
      case ANY.INT:
        this.varInt();
        return;
      case ANY.FLOAT32:
        this.skip(4);
        return;
      case ANY.FLOAT64:
      case ANY.BIGINT64:
        this.skip(8);
        return;
      case ANY.STRING:
        this.varString();
        return;
      case ANY.OBJECT: {
        const count = this.varUint();
        for (let i = 0; i < count; i++) {
          this.varString();
          this.anyValue();
        }
        return;
      }
      case ANY.ARRAY: {
        const count = this.varUint();
        for (let i = 0; i < count; i++) this.anyValue();
        return;
      }
      case ANY.BYTES:
        this.varBytes();
        return;
      default:
        throw refused;
    }
  }

  /** yjs readItemContent for one content ref; returns the content's length (yjs Content*.getLength()). */
  content(ref: number): number {
    switch (ref) {
      case CONTENT.DELETED:
        return this.varUint();
      case CONTENT.JSON: {
        const count = this.varUint();
        for (let i = 0; i < count; i++) this.json(true);
        return count;
      }
      case CONTENT.BINARY:
        this.varBytes();
        return 1;
      case CONTENT.STRING:
        return this.varString();
      case CONTENT.EMBED:
        this.json(false);
        return 1;
      case CONTENT.FORMAT:
        this.varString();
        this.json(false);
        return 1;
      case CONTENT.TYPE: {
        const typeRef = this.varUint();
        if (typeRef > LAST_TYPE_REF) throw refused;
        if (typeRef === XML_ELEMENT || typeRef === XML_HOOK) this.varString();
        return 1;
      }
      case CONTENT.ANY: {
        const count = this.varUint();
        for (let i = 0; i < count; i++) this.anyValue();
        return count;
      }
      case CONTENT.DOC:
        // A subdocument: Yjs builds a Doc from its options, which can fail on values only building shows.
        throw unsure;
      default:
        // 0 (GC) and 10 (Skip) are no item content; 11..31 are no content at all.
        throw refused;
    }
  }

  /** yjs lazyStructReaderGenerator then readDeleteSet, V1 encoding. Bytes after the delete set are ignored, as there. */
  update(): void {
    const clients = this.varUint();
    let client = 0;
    let clock = 0;
    let structs = 0;
    let structsStart = 0;
    let length = 0;
    const sections: UpdateSection[] | undefined = this.record ? [] : undefined;
    for (let c = 0; c < clients; c++) {
      const start = this.pos;
      const before = length;
      structs = this.varUint();
      client = this.varUint();
      clock = this.varUint();
      structsStart = this.pos;
      for (let s = 0; s < structs; s++) {
        const info = this.byte();
        // Skip and GC: their length.
        if (info === SKIP || (info & CONTENT_REF) === 0) length += this.varUint();
        else {
          if ((info & HAS_ORIGIN) !== 0) this.id();
          if ((info & HAS_RIGHT_ORIGIN) !== 0) this.id();
          if ((info & (HAS_ORIGIN | HAS_RIGHT_ORIGIN)) === 0) {
            // The parent: a root type's name (1) or an item's id.
            if (this.varUint() === 1) this.varString();
            else this.id();
            if ((info & HAS_PARENT_SUB) !== 0) this.varString();
          }
          length += this.content(info & CONTENT_REF);
        }
      }
      sections?.push({ client, clock, length: length - before, structs, start, structsStart, end: this.pos });
    }
    const deletesStart = this.pos;
    const deleting = this.varUint();
    for (let c = 0; c < deleting; c++) {
      this.varUint(); // client
      const ranges = this.varUint();
      for (let r = 0; r < ranges; r++) {
        this.varUint(); // clock
        this.varUint(); // length
      }
    }
    this.sections = sections;
    this.deletesStart = deletesStart;
    this.deleting = deleting;
    if (!this.measure || clients > 1) return;
    this.shape = clients === 1 ? { client, clock, length, structs, structsStart, deletesStart, end: this.pos, deleting } : { client: undefined, clock: 0, length: 0, structs: 0, structsStart: deletesStart, deletesStart, end: this.pos, deleting };
  }

  private id(): void {
    this.varUint();
    this.varUint();
  }
}

function decode(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    // A TypeError for invalid UTF-8, as lib0's fatal decoder throws.
    throw refused;
  }
}

/**
 * The shape of `bytes` when they are a Yjs V1 update of one client's structs or of none (what a client sends for one
 * local transaction); undefined for anything else, including bytes that do not decode. Never throws.
 */
export function updateShape(bytes: Uint8Array): UpdateShape | undefined {
  const walk = new Walk(bytes, true);
  try {
    walk.update();
    return walk.shape;
  } catch {
    // Refused, unsure (a subdocument) or a RangeError from nesting past the stack: no shape. The caller gives such
    // bytes to Yjs's own merge, which judges them as it would have anyway.
    return undefined;
  }
}

/**
 * The client parts of `bytes` when they are a Yjs V1 update of any number of clients (a snapshot), with where its delete
 * set starts and ends and how many clients that names; undefined for anything that does not decode. Never throws.
 */
export function updateSections(bytes: Uint8Array): { sections: readonly UpdateSection[]; deletesStart: number; end: number; deleting: number } | undefined {
  const walk = new Walk(bytes, true, true);
  try {
    walk.update();
  } catch {
    // As updateShape: the caller leaves such bytes to Yjs.
    return undefined;
  }
  return walk.sections === undefined ? undefined : { sections: walk.sections, deletesStart: walk.deletesStart, end: walk.pos, deleting: walk.deleting };
}

/** Whether `bytes` decode as a Yjs V1 update, answered without building what they describe. Never throws. */
export function checkUpdate(bytes: Uint8Array): UpdateCheck {
  try {
    new Walk(bytes).update();
    return 'valid';
  } catch (error) {
    if (error === refused) return 'invalid';
    if (error === unsure) return 'unsure';
    // Anything else (a RangeError from nesting past the stack in a deep readAny) is left to Y.decodeUpdate to judge.
    return 'unsure';
  }
}
