// Owns load scenarios as data: their shape, the named presets, how several combine, validation, and the plan of clients and rates they imply.

/** Text inserted per edit, in characters (uniform in [min, max]). */
export interface TextSize {
  readonly min: number;
  readonly max: number;
}

export interface EditingWorkload {
  /** Sync connections per document that edit. */
  readonly editorsPerDocument: number;
  /** Edits per second of each editor (open model: sent on schedule whatever the server does). */
  readonly editsPerSecond: number;
  readonly textSize: TextSize;
  /** Once the text is longer, each edit also deletes as much as it inserts (keeps documents bounded). */
  readonly maxDocumentChars: number;
}

export interface ReadersWorkload {
  /** Read-only sync connections per document, connected during ramp-up. */
  readonly perDocument: number;
  /** More readers per document that join late (they catch up through the sync handshake). */
  readonly lateJoinersPerDocument: number;
  /** When late joiners connect, in seconds from the start (default: half-way through the steady phase). */
  readonly lateJoinAtSeconds?: number;
}

export interface PresenceWorkload {
  /** Awareness (cursor) updates per second of each editor. */
  readonly updatesPerSecond: number;
  /** Short-lived connections per second (whole run) that join a document, show presence, and leave. */
  readonly churnPerSecond: number;
  /** How long each churning connection stays. */
  readonly churnHoldSeconds: number;
}

export interface CommentsWorkload {
  /** New comment threads per second across all documents (REST Add Comment Annotations). */
  readonly threadsPerSecond: number;
  /** Replies each thread receives (REST Add Comments), one every `replyEverySeconds`. */
  readonly repliesPerThread: number;
  readonly replyEverySeconds: number;
}

export const REST_OPERATIONS = ['comments.get', 'comments.count', 'presence.get', 'presence.update', 'documents.get', 'crdt.get'] as const;
export type RestOperation = (typeof REST_OPERATIONS)[number];

export interface RestWorkload {
  /** Requests per second across all operations of the mix (open model). */
  readonly requestsPerSecond: number;
  /** Relative weights of the operations. */
  readonly mix: Partial<Record<RestOperation, number>>;
}

export interface Scenario {
  readonly name: string;
  /** Documents the workloads share. */
  readonly documents: number;
  /** Connections open and rates climb linearly over this time. */
  readonly rampUpSeconds: number;
  /** Full load for this time; the summary's headline figures are of this phase. */
  readonly steadySeconds: number;
  /** Arrival process of every rate: evenly spaced, or Poisson (exponential gaps, seeded). */
  readonly arrivals: 'uniform' | 'poisson';
  readonly editing?: EditingWorkload;
  readonly readers?: ReadersWorkload;
  readonly presence?: PresenceWorkload;
  readonly comments?: CommentsWorkload;
  readonly rest?: RestWorkload;
}

export type ScenarioPatch = { -readonly [K in keyof Scenario]?: Scenario[K] extends object | undefined ? Partial<NonNullable<Scenario[K]>> : Scenario[K] };

const BASE: Scenario = { name: 'custom', documents: 10, rampUpSeconds: 10, steadySeconds: 50, arrivals: 'uniform' };

const BLOCKS: Readonly<Record<string, ScenarioPatch>> = {
  editing: { editing: { editorsPerDocument: 3, editsPerSecond: 2, textSize: { min: 1, max: 20 }, maxDocumentChars: 20_000 } },
  readers: { readers: { perDocument: 10, lateJoinersPerDocument: 2 } },
  presence: { presence: { updatesPerSecond: 2, churnPerSecond: 2, churnHoldSeconds: 5 } },
  comments: { comments: { threadsPerSecond: 2, repliesPerThread: 3, replyEverySeconds: 2 } },
  rest: {
    rest: {
      requestsPerSecond: 50,
      mix: { 'comments.get': 4, 'comments.count': 1, 'presence.get': 2, 'presence.update': 2, 'documents.get': 1, 'crdt.get': 1 },
    },
  },
};

/** Every block at once: a product page with editing, readers, presence, comments and REST reads. */
const collaboration = (): ScenarioPatch => combine(Object.values(BLOCKS));

/** Named building blocks; `--scenario editing+readers+comments` combines them. */
export const PRESETS: Readonly<Record<string, ScenarioPatch>> = {
  ...BLOCKS,
  collaboration: collaboration(),
  // the same, tiny and short: checks a deployment answers before a real run
  smoke: combine([
    collaboration(),
    { documents: 2, rampUpSeconds: 1, steadySeconds: 4, readers: { perDocument: 2, lateJoinersPerDocument: 1 }, rest: { requestsPerSecond: 10 } },
  ]),
};

/** Merges patches left to right; a workload section is merged field by field. */
export function combine(patches: readonly ScenarioPatch[]): ScenarioPatch {
  const out: Record<string, unknown> = {};
  for (const patch of patches) {
    for (const [key, value] of Object.entries(patch)) {
      const previous = out[key];
      out[key] = isPlainObject(value) && isPlainObject(previous) ? { ...previous, ...value } : value;
    }
  }
  return out as ScenarioPatch;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Resolves `a+b+c` preset names (or a parsed scenario file) plus overrides into a complete, validated scenario. */
export function resolveScenario(names: readonly string[], patches: readonly ScenarioPatch[] = []): Scenario {
  const presets = names.map((name) => {
    const preset = PRESETS[name];
    if (preset === undefined) throw new Error(`unknown scenario "${name}" (known: ${Object.keys(PRESETS).join(', ')})`);
    return preset;
  });
  const name = names.length > 0 ? names.join('+') : 'custom';
  const merged = combine([BASE, { name }, ...presets, ...patches]);
  // a section given only in part (by a flag) takes the preset's other fields
  for (const section of ['editing', 'readers', 'presence', 'comments', 'rest'] as const) {
    const given = merged[section];
    if (given !== undefined && PRESETS[section]?.[section] !== undefined) {
      (merged as Record<string, unknown>)[section] = { ...PRESETS[section][section], ...given };
    }
  }
  return validateScenario(merged);
}

/** Checks every field and returns the scenario typed; errors name the field. */
export function validateScenario(raw: ScenarioPatch): Scenario {
  const fail = (field: string, rule: string): never => {
    throw new Error(`scenario.${field} ${rule}`);
  };
  const num = (value: unknown, field: string, min: number, max: number, integer = false): number => {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
      return fail(field, `must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max} (got ${JSON.stringify(value)})`);
    }
    return value;
  };
  const scenario: Scenario = {
    name: typeof raw.name === 'string' && raw.name !== '' ? raw.name : 'custom',
    documents: num(raw.documents, 'documents', 1, 100_000, true),
    rampUpSeconds: num(raw.rampUpSeconds, 'rampUpSeconds', 0, 86_400),
    steadySeconds: num(raw.steadySeconds, 'steadySeconds', 0.1, 86_400),
    arrivals: raw.arrivals === 'poisson' ? 'poisson' : raw.arrivals === undefined || raw.arrivals === 'uniform' ? 'uniform' : fail('arrivals', 'must be "uniform" or "poisson"'),
  };
  const out = scenario as { -readonly [K in keyof Scenario]: Scenario[K] };
  if (raw.editing !== undefined) {
    const e = raw.editing;
    const min = num(e.textSize?.min, 'editing.textSize.min', 1, 1_000_000, true);
    out.editing = {
      editorsPerDocument: num(e.editorsPerDocument, 'editing.editorsPerDocument', 1, 10_000, true),
      editsPerSecond: num(e.editsPerSecond, 'editing.editsPerSecond', 0, 10_000),
      textSize: { min, max: num(e.textSize?.max, 'editing.textSize.max', min, 1_000_000, true) },
      maxDocumentChars: num(e.maxDocumentChars ?? 20_000, 'editing.maxDocumentChars', 1, 100_000_000, true),
    };
  }
  if (raw.readers !== undefined) {
    const r = raw.readers;
    out.readers = {
      perDocument: num(r.perDocument ?? 0, 'readers.perDocument', 0, 100_000, true),
      lateJoinersPerDocument: num(r.lateJoinersPerDocument ?? 0, 'readers.lateJoinersPerDocument', 0, 100_000, true),
      ...(r.lateJoinAtSeconds === undefined ? {} : { lateJoinAtSeconds: num(r.lateJoinAtSeconds, 'readers.lateJoinAtSeconds', 0, 86_400) }),
    };
  }
  if (raw.presence !== undefined) {
    const p = raw.presence;
    out.presence = {
      updatesPerSecond: num(p.updatesPerSecond ?? 0, 'presence.updatesPerSecond', 0, 1000),
      churnPerSecond: num(p.churnPerSecond ?? 0, 'presence.churnPerSecond', 0, 10_000),
      churnHoldSeconds: num(p.churnHoldSeconds ?? 5, 'presence.churnHoldSeconds', 0.1, 86_400),
    };
  }
  if (raw.comments !== undefined) {
    const c = raw.comments;
    out.comments = {
      threadsPerSecond: num(c.threadsPerSecond, 'comments.threadsPerSecond', 0, 100_000),
      repliesPerThread: num(c.repliesPerThread ?? 0, 'comments.repliesPerThread', 0, 1000, true),
      replyEverySeconds: num(c.replyEverySeconds ?? 1, 'comments.replyEverySeconds', 0.001, 86_400),
    };
  }
  if (raw.rest !== undefined) {
    const mix: Partial<Record<RestOperation, number>> = {};
    for (const [op, weight] of Object.entries(raw.rest.mix ?? {})) {
      if (!(REST_OPERATIONS as readonly string[]).includes(op)) fail(`rest.mix.${op}`, `is not an operation (known: ${REST_OPERATIONS.join(', ')})`);
      mix[op as RestOperation] = num(weight, `rest.mix.${op}`, 0, 1_000_000);
    }
    if (Object.values(mix).every((weight) => weight === 0)) fail('rest.mix', 'needs at least one operation with a positive weight');
    out.rest = { requestsPerSecond: num(raw.rest.requestsPerSecond, 'rest.requestsPerSecond', 0, 1_000_000), mix };
  }
  if (out.editing === undefined && out.readers === undefined && out.presence === undefined && out.comments === undefined && out.rest === undefined) {
    fail('', 'has no workload: give at least one of editing, readers, presence, comments, rest');
  }
  return scenario;
}

export const durationSeconds = (scenario: Scenario): number => scenario.rampUpSeconds + scenario.steadySeconds;

/** Whether a scenario needs Plait's REST API (comment threads, REST mix) rather than only a y-websocket-compatible endpoint. */
export const needsRest = (scenario: Scenario): boolean => scenario.comments !== undefined || scenario.rest !== undefined;
