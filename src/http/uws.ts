// Owns loading uWebSockets.js: tries each native build in order, says which loaded, and refuses the slow JS shim.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Uws from 'uWebSockets.js';

export type UwsModule = typeof Uws;

export class UwsFallbackError extends Error {
  override readonly name = 'UwsFallbackError';
}

/** One uWebSockets.js package Plait may run on. `load` throws when its native binary does not load here. */
export interface UwsCandidate {
  /** The npm package, as the README's matrix names it. */
  readonly name: string;
  /** The specifier under node_modules (the unofficial build is installed under the alias `uWebSockets.js`). */
  readonly specifier: string;
  /** What a user needs for this build, said when none loads. */
  readonly needs: string;
  readonly load: () => unknown;
}

/** What the loader chose, and why it passed over the builds before it. */
export interface UwsChoice {
  readonly uws: UwsModule;
  readonly build: string;
  readonly version: string;
  readonly skipped: readonly { readonly build: string; readonly reason: string }[];
}

const require = createRequire(import.meta.url);

/**
 * The package version, read from its package.json next to the resolved entry (exports maps hide `./package.json`),
 * with the package's own name when it is not the expected one (the official build installed under the alias).
 */
function versionOf(specifier: string, expectedName: string): string {
  try {
    let dir = dirname(require.resolve(specifier));
    for (let i = 0; i < 4; i++, dir = dirname(dir)) {
      try {
        const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
        if (typeof pkg.version === 'string' && typeof pkg.name === 'string') {
          return pkg.name === expectedName ? pkg.version : `${pkg.version} (package ${pkg.name})`;
        }
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  } catch (error) {
    return `unknown (${(error as Error).message.split('\n')[0] ?? ''})`;
  }
  return 'unknown';
}

/**
 * The builds in order of preference. The official build (republished unchanged as @btc-vision/uwebsockets.js)
 * has binaries for Node 20, 22, 24 and 25 but needs glibc 2.38+ on Linux; the unofficial 20.30 build has
 * binaries up to Node 20 and loads on older glibc (Debian 12).
 */
export const UWS_CANDIDATES: readonly UwsCandidate[] = [
  {
    name: '@btc-vision/uwebsockets.js',
    specifier: '@btc-vision/uwebsockets.js',
    needs: 'Node 20, 22, 24 or 25 on glibc 2.38+ Linux, macOS or Windows (x64/arm64)',
    load: () => require('@btc-vision/uwebsockets.js'),
  },
  {
    name: '@trufflesuite/uws-js-unofficial',
    specifier: 'uWebSockets.js',
    needs: 'Node 20 on Linux, macOS or Windows (x64/arm64)',
    load: () => require('uWebSockets.js'),
  },
];

/**
 * The unofficial package silently swaps in a pure-JS shim when its native binary does not load (wrong Node ABI,
 * platform, or UWS_USE_FALLBACK set). The shim lacks the native-only `getParts`, which is how we tell.
 */
export function isNative(module: unknown): module is UwsModule {
  if (module === null || typeof module !== 'object') return false;
  const exported = module as Record<string, unknown>;
  return typeof exported['getParts'] === 'function' && typeof exported['App'] === 'function' && typeof exported['us_socket_local_port'] === 'function';
}

/** Tries each candidate in order and returns the first native build; throws UwsFallbackError naming every reason. */
export function chooseUws(candidates: readonly UwsCandidate[], version: (c: UwsCandidate) => string = (c) => versionOf(c.specifier, c.name)): UwsChoice {
  const skipped: { build: string; reason: string }[] = [];
  for (const candidate of candidates) {
    let loaded: unknown;
    try {
      loaded = candidate.load();
    } catch (error) {
      skipped.push({ build: candidate.name, reason: firstLines(error) });
      continue;
    }
    if (!isNative(loaded)) {
      skipped.push({ build: candidate.name, reason: 'its native binary did not load and it fell back to its slow pure-JS (ws) shim, which Plait refuses' });
      continue;
    }
    return { uws: loaded, build: candidate.name, version: version(candidate), skipped };
  }
  throw new UwsFallbackError(
    `no native uWebSockets.js build loads on Node ${process.version} (ABI ${process.versions.modules}, ${process.platform}-${process.arch}):\n` +
      skipped.map((s) => `  - ${s.build}: ${s.reason}`).join('\n') +
      '\nPlait refuses to start on the slow shim. It needs one of:\n' +
      candidates.map((c) => `  - ${c.name}: ${c.needs}`).join('\n') +
      '\nand UWS_USE_FALLBACK unset. The README lists the supported Node versions.',
  );
}

function firstLines(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  // The official build's message is its support statement followed by dlopen's reason (e.g. GLIBC_2.38 not found).
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .slice(-2)
    .join(' ')
    .slice(0, 400);
}

let chosen: UwsChoice | undefined;

/** The build this process runs on, chosen once. */
export function loadUwsChoice(): UwsChoice {
  return (chosen ??= chooseUws(UWS_CANDIDATES));
}

export function loadUws(): UwsModule {
  return loadUwsChoice().uws;
}
