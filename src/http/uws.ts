// Owns loading uWebSockets.js and refusing to run on the slow `ws` shim the unofficial package falls back to.
import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';

export type UwsModule = typeof Uws;

export class UwsFallbackError extends Error {
  override readonly name = 'UwsFallbackError';
}

/**
 * The package silently swaps in a pure-JS shim when its native binary does not load (wrong Node ABI,
 * platform, or UWS_USE_FALLBACK set). The shim lacks the native-only exports, which is how we tell.
 */
export function loadUws(): UwsModule {
  const require = createRequire(import.meta.url);
  const uws = require('uWebSockets.js') as UwsModule;
  const exported = uws as unknown as Record<string, unknown>;
  const native = typeof exported['getParts'] === 'function' && typeof exported['H3App'] === 'function';
  if (!native) {
    throw new UwsFallbackError(
      `uWebSockets.js could not load its native binary for Node ${process.version} ` +
        `(ABI ${process.versions.modules}, ${process.platform}-${process.arch}) and fell back to its slow ws shim. ` +
        'Plait refuses to start on the shim. Run on Node 20 (ABI 115) on linux, darwin or win32 x64/arm64, ' +
        'and make sure UWS_USE_FALLBACK is not set.',
    );
  }
  return uws;
}
