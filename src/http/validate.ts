// Owns request validation: one ajv instance, schemas compiled once at start, errors rendered as field-naming messages.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { invalidArgument } from '../errors.js';

const ajv = new Ajv({ allErrors: false, strict: true, coerceTypes: false, useDefaults: false, allowUnionTypes: true });
// ajv-formats is CommonJS: under NodeNext the default import is module.exports, whose `default` is the plugin.
addFormatsModule.default(ajv, ['email', 'uri', 'date-time']);

export type Validator<T> = (value: unknown) => T;

/** Compiles `schema` once; the returned function narrows `data` to T or throws INVALID_ARGUMENT naming the field. */
export function compileValidator<T>(schema: object): Validator<T> {
  const validate: ValidateFunction<T> = ajv.compile<T>(schema);
  return (value: unknown): T => {
    if (validate(value)) return value;
    const first = validate.errors?.[0];
    throw invalidArgument(first === undefined ? 'data is invalid' : describeError(first));
  };
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
