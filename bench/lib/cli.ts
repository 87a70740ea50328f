// Owns the command line of the bench scripts: flag parsing with bounds, the server list, profiling dirs and the closing table.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { isServerKind, type ServerKind } from './launch.js';
import { formatProfile, summarizeProfiles } from './profile.js';
import { progress, type Figure } from './report.js';
import { textTable } from './table.js';

export type Flags = Record<string, string | boolean | undefined>;

/** Parses `--name value` flags; every script also accepts --help, --server and --profile. */
export function flags(usage: string, options: NonNullable<ParseArgsConfig['options']>): Flags {
  const parsed = parseArgs({
    options: { ...options, help: { type: 'boolean' }, server: { type: 'string' }, profile: { type: 'boolean' } },
    strict: true,
    allowPositionals: false,
  });
  if (parsed.values['help'] === true) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  return parsed.values as Flags;
}

/** A positive number flag within [min, max]. */
export function num(values: Flags, name: string, fallback: number, min = 0, max = 1e9): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (typeof raw !== 'string' || !Number.isFinite(value) || value < min || value > max) {
    throw new Error(`--${name} must be a number from ${min} to ${max}, got "${String(raw)}"`);
  }
  return value;
}

/** `--server plait,hocuspocus` (default: the given list). */
export function servers(values: Flags, fallback: readonly ServerKind[]): ServerKind[] {
  const raw = values['server'];
  if (typeof raw !== 'string') return [...fallback];
  return raw.split(',').map((name) => {
    const kind = name.trim();
    if (!isServerKind(kind)) throw new Error(`unknown --server "${kind}"`);
    return kind;
  });
}

/** With --profile, a fresh directory for Plait's V8 CPU profile; undefined otherwise. */
export function profileDir(values: Flags): string | undefined {
  return values['profile'] === true ? mkdtempSync(join(tmpdir(), 'plait-bench-prof-')) : undefined;
}

export function reportProfiles(dir: string | undefined): void {
  if (dir === undefined) return;
  // the busiest thread is the server's main thread; the others (module loader) are skipped
  const summaries = summarizeProfiles(dir).sort((a, b) => b.busyMs - a.busyMs);
  const busiest = summaries[0];
  if (busiest !== undefined) progress(formatProfile(busiest));
}

/** Ends a script run alone: the table of its figures on stdout. */
export function finish(figures: readonly Figure[]): void {
  process.stdout.write(`\n${textTable(figures)}\n`);
}

/** Runs a script's main, turning failures into a message and exit code 1. */
export function main(run: () => Promise<void>): void {
  run().then(
    () => process.exit(),
    (error: unknown) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}

/** `--plait-env K=V,K2=V2` → extra environment for the Plait server only (experiments); undefined when absent. */
export function plaitEnv(values: Flags): Record<string, string> | undefined {
  const raw = values['plait-env'];
  if (typeof raw !== 'string') return undefined;
  const env: Record<string, string> = {};
  for (const pair of raw.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--plait-env takes K=V pairs, got "${pair}"`);
    env[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return env;
}
