// Owns agent secrets at rest: which fields are secret, sealing them on write, `__redacted__` on read, plaintext for runs.
import type { Secrets } from '../auth/secrets.js';
import { invalidArgument } from '../errors.js';
import type { Behaviour, JsonObject } from './model.js';

export const REDACTED = '__redacted__';

/** A stored secret: AES-GCM under the server key (src/auth/secrets.ts). */
interface Sealed {
  readonly $sealed: string;
}

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);
const isSealed = (value: unknown): value is Sealed => isObject(value) && typeof value['$sealed'] === 'string' && Object.keys(value).length === 1;

/**
 * A secret area: an object whose string leaves are secrets, except the `type` discriminator and, for headers, nothing.
 * `rest-api.headers` (every value), `rest-api.auth` and `mcpServers[].auth` (every string leaf but `type`).
 */
interface Area {
  /** Where the area sits in the behaviour, for messages. */
  readonly at: string;
  readonly get: () => unknown;
  readonly set: (value: JsonObject) => void;
  /** The same area in the previous version, where `__redacted__` takes its value from. */
  readonly previous: unknown;
  readonly keepPlain: readonly string[];
}

function areas(behaviour: JsonObject, previous: JsonObject | undefined): Area[] {
  const found: Area[] = [];
  const cg = behaviour['contextGathering'];
  const rest = isObject(cg) && isObject(cg['strategyOptions']) ? cg['strategyOptions']['rest-api'] : undefined;
  const prevCg = previous?.['contextGathering'];
  const prevRest = isObject(prevCg) && isObject(prevCg['strategyOptions']) ? prevCg['strategyOptions']['rest-api'] : undefined;
  if (isObject(rest)) {
    for (const key of ['headers', 'auth'] as const) {
      found.push({
        at: `contextGathering.strategyOptions['rest-api'].${key}`,
        get: () => rest[key],
        set: (value) => (rest[key] = value),
        previous: isObject(prevRest) ? prevRest[key] : undefined,
        keepPlain: key === 'auth' ? ['type'] : [],
      });
    }
  }
  const exec = behaviour['execution'];
  const servers = isObject(exec) && Array.isArray(exec['mcpServers']) ? (exec['mcpServers'] as unknown[]) : [];
  const prevExec = previous?.['execution'];
  const prevServers = isObject(prevExec) && Array.isArray(prevExec['mcpServers']) ? (prevExec['mcpServers'] as unknown[]) : [];
  servers.forEach((server, index) => {
    if (!isObject(server)) return;
    // The same server in the previous version: same url first (lists get reordered), else the same position.
    const match = prevServers.find((p) => isObject(p) && p['url'] === server['url']) ?? prevServers[index];
    found.push({
      at: `execution.mcpServers[${index}].auth`,
      get: () => server['auth'],
      set: (value) => (server['auth'] = value),
      previous: isObject(match) ? match['auth'] : undefined,
      keepPlain: ['type'],
    });
  });
  return found;
}

/** Rewrites every secret leaf of `area` with `leaf(value, previousValue, path)`, recursing into nested objects. */
function mapLeaves(value: JsonObject, previous: unknown, keepPlain: readonly string[], at: string, leaf: (v: unknown, prev: unknown, at: string) => unknown): JsonObject {
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    const prevChild = isObject(previous) ? previous[key] : undefined;
    if (keepPlain.includes(key)) out[key] = child;
    else if (isObject(child) && !isSealed(child)) out[key] = mapLeaves(child, prevChild, [], `${at}.${key}`, leaf);
    else out[key] = leaf(child, prevChild, `${at}.${key}`);
  }
  return out;
}

function transform(behaviour: Behaviour, previous: Behaviour | undefined, leaf: (v: unknown, prev: unknown, at: string) => unknown): Behaviour {
  const copy = structuredClone(behaviour) as JsonObject;
  for (const area of areas(copy, previous as JsonObject | undefined)) {
    const value = area.get();
    if (isObject(value)) area.set(mapLeaves(value, area.previous, area.keepPlain, `data.${area.at}`, leaf));
  }
  return copy as Behaviour;
}

/**
 * Seals every secret of `behaviour` for storage. A secret sent back as `__redacted__` keeps the sealed value stored at
 * the same place in `previous`; with nothing stored there it is refused.
 */
export function sealSecrets(behaviour: Behaviour, previous: Behaviour | undefined, secrets: Secrets): Behaviour {
  return transform(behaviour, previous, (value, prev, at) => {
    if (value === REDACTED) {
      if (isSealed(prev)) return prev;
      throw invalidArgument(`${at} is "${REDACTED}" but no secret is stored there; send the secret itself`);
    }
    if (typeof value !== 'string') throw invalidArgument(`${at} must be a string (secrets are strings)`);
    return { $sealed: secrets.encrypt(value) } satisfies Sealed;
  });
}

/** The stored behaviour as answered: every secret is `__redacted__`. */
export function redactSecrets(behaviour: Behaviour): Behaviour {
  return transform(behaviour, undefined, (value) => (isSealed(value) ? REDACTED : value));
}

/** The stored behaviour with plaintext secrets, for a run (never answered, never logged). */
export function openSecrets(behaviour: Behaviour, secrets: Secrets): Behaviour {
  return transform(behaviour, undefined, (value) => (isSealed(value) ? secrets.decrypt(value.$sealed) : value));
}
