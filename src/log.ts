// Owns structured logging: one JSON object per line on stdout, filtered by level.
import type { LogLevel } from './config.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

function serializeError(value: unknown): unknown {
  if (value instanceof Error) {
    return { name: value.name, message: value.message, stack: value.stack, cause: serializeError(value.cause) };
  }
  return value;
}

export function createLogger(level: LogLevel, base: LogFields = {}, write: (line: string) => void = defaultWrite): Logger {
  const threshold = RANK[level];
  const emit = (at: Exclude<LogLevel, 'silent'>, msg: string, fields?: LogFields): void => {
    if (RANK[at] < threshold) return;
    const record: LogFields = { time: new Date().toISOString(), level: at, msg, ...base };
    if (fields !== undefined) {
      for (const [key, value] of Object.entries(fields)) record[key] = serializeError(value);
    }
    write(JSON.stringify(record));
  };
  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    child: (fields) => createLogger(level, { ...base, ...fields }, write),
  };
}

function defaultWrite(line: string): void {
  process.stdout.write(`${line}\n`);
}
