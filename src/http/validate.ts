// Owns request validation: one ajv instance, each schema compiled once at its first request, errors rendered as field-naming messages.
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import type { FormatsPlugin } from 'ajv-formats';
import { AppError, invalidArgument } from '../errors.js';
import { utf8Bytes } from '../limits.js';

let instance: Ajv | undefined;
let loading: Promise<void> | undefined;

/**
 * Loads ajv and makes the one instance, at the first request: ajv's code (~130 KB with its formats and URI parser,
 * evaluated at import) and its instance (meta-schemas, formats, keywords, ~0.1 MB of heap) are not needed by a server
 * that has not been sent a request yet (bench/README.md, "Twelfth session"). Undefined once loaded, so a request
 * awaits it only while it loads. The serve step (src/http/serve.ts) awaits it before anything else.
 */
export function validatorLoading(): Promise<void> | undefined {
  if (instance !== undefined) return undefined;
  loading ??= Promise.all([import('ajv'), import('ajv-formats')]).then(([ajv, formats]) => {
    // Both are CommonJS: `default` is module.exports, in Node and in the bundle alike (esbuild's chunk for a dynamic
    // import of CommonJS exports only that), and it carries the class (`Ajv`) and the plugin (`default`) as properties.
    instance ??= makeAjv(ajv.default.Ajv, formats.default.default);
  }, (error: unknown) => {
    // The requests waiting are answered INTERNAL (src/http/serve.ts); the next one tries again.
    loading = undefined;
    throw error;
  });
  return loading;
}

function validator(): Ajv {
  if (instance === undefined) throw new AppError('INTERNAL', 'the request validator was used before validatorLoading() settled');
  return instance;
}

function makeAjv(AjvClass: typeof Ajv, addFormats: FormatsPlugin): Ajv {
  const ajv = new AjvClass({ allErrors: false, strict: true, coerceTypes: false, useDefaults: false, allowUnionTypes: true });
  addFormats(ajv, ['email', 'uri', 'date-time']);

  /** `maxBytes`: a string's UTF-8 length (ids become LMDB key parts, whose limit is in bytes). */
  ajv.addKeyword({
    keyword: 'maxBytes',
    type: 'string',
    schemaType: 'number',
    validate: function maxBytes(limit: number, data: string): boolean {
      if (utf8Bytes(data) <= limit) return true;
      (maxBytes as { errors?: unknown[] }).errors = [{ keyword: 'maxBytes', params: { limit }, message: `must be at most ${limit} bytes` }];
      return false;
    },
  });

  /** `maxJsonBytes`: a free-form JSON field's encoded size (it is stored and sent back whole). */
  ajv.addKeyword({
    keyword: 'maxJsonBytes',
    schemaType: 'number',
    validate: function maxJsonBytes(limit: number, data: unknown): boolean {
      if (utf8Bytes(JSON.stringify(data) ?? '') <= limit) return true;
      (maxJsonBytes as { errors?: unknown[] }).errors = [{ keyword: 'maxJsonBytes', params: { limit }, message: `must be at most ${limit} bytes` }];
      return false;
    },
  });
  return ajv;
}

export type Validator<T> = (value: unknown) => T;

/**
 * The returned function narrows `data` to T or throws INVALID_ARGUMENT naming the field. `schema` is compiled at the
 * first call, not here: compiling all ~130 operations' schemas at start cost ~4 MB of heap (generated source and
 * code) and grew V8's young generation during startup, for routes a deployment may never be sent
 * (bench/README.md, "Baseline memory"). `checkSchema` compiles one now (the test of every operation's schema).
 */
export function compileValidator<T>(schema: object): Validator<T> {
  let validate: ValidateFunction<T> | undefined;
  return (value: unknown): T => {
    validate ??= validator().compile<T>(schema);
    if (validate(value)) return value;
    const first = validate.errors?.[0];
    throw invalidArgument(first === undefined ? 'data is invalid' : describeError(first));
  };
}

/** Compiles `schema` with the request validator's ajv (its keywords and formats) and throws what ajv rejects. */
export async function checkSchema(schema: object): Promise<void> {
  await validatorLoading();
  validator().compile(schema);
}

function fieldPath(instancePath: string): string {
  let path = 'data';
  for (const segment of instancePath.split('/').slice(1)) {
    const name = segment.replaceAll('~1', '/').replaceAll('~0', '~');
    path += /^\d+$/.test(name) ? `[${name}]` : `.${name}`;
  }
  return path;
}

export function describeError(error: ErrorObject): string {
  const at = fieldPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `${at}.${String(params['missingProperty'])} is required`;
    case 'additionalProperties':
      return `${at}.${String(params['additionalProperty'])} is not an accepted field`;
    case 'type':
      return `${at} must be ${withArticle(String(params['type']))}`;
    case 'enum':
      return `${at} must be one of: ${(params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `${at} must be ${JSON.stringify(params['allowedValue'])}`;
    case 'minLength':
      return params['limit'] === 1 ? `${at} must not be empty` : `${at} must be at least ${String(params['limit'])} characters`;
    case 'maxLength':
      return `${at} must be at most ${String(params['limit'])} characters`;
    case 'minItems':
      return `${at} must have at least ${String(params['limit'])} item(s)`;
    case 'maxBytes':
      return `${at} must be at most ${String(params['limit'])} bytes in UTF-8`;
    case 'maxJsonBytes':
      return `${at} must be at most ${String(params['limit'])} bytes as JSON`;
    case 'maxItems':
      return `${at} must have at most ${String(params['limit'])} items`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `${at} ${error.message ?? 'is out of range'}`;
    case 'format':
      return `${at} must be a valid ${String(params['format'])}`;
    case 'pattern':
      return `${at} has characters that are not allowed`;
    case 'minProperties':
      return `${at} must have at least ${String(params['limit'])} field(s)`;
    case 'anyOf':
    case 'oneOf':
      return `${at} does not match any accepted shape`;
    case 'not':
      return `${at} is not allowed here`;
    default:
      return `${at} ${error.message ?? 'is invalid'}`;
  }
}

function withArticle(type: string): string {
  if (type.includes(',')) return `one of: ${type}`;
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
