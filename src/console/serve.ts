// Owns serving the built console at /console (GET only): its files from dist/console, read from disk on each request.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { Logger } from '../log.js';

const FILES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.js.map': 'application/json; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/** The package root: the nearest folder above this file with a package.json (src/console in dev, dist/src/console built). */
export function packageRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
  return dir;
}

/** Where `npm run build` puts the console. */
export const defaultConsoleDir = (): string => join(packageRoot(), 'dist', 'console');

function send(res: HttpResponse, status: string, type: string, body: string | Buffer): void {
  res.cork(() => {
    // The console holds credentials: no framing by other sites, no caching of the page.
    res.writeStatus(status).writeHeader('content-type', type).writeHeader('cache-control', 'no-store').writeHeader('x-frame-options', 'DENY').end(body);
  });
}

/**
 * Mounts /console. The files are built by `npm run build` (src/console/build.ts); without them /console answers 503
 * saying so, and the rest of the server is unaffected. They are read from disk per request, not held: the console is
 * an operator's page, requested rarely, and its script with its source map is ~2 MB that every idle server kept in
 * memory (bench/README.md, "Baseline memory").
 */
export function mountConsole(app: TemplatedApp, dir: string, log: Pick<Logger, 'warn'>): void {
  for (const name of Object.keys(FILES)) {
    if (!existsSync(join(dir, name))) log.warn('console file missing; run `npm run build` to build the console', { file: join(dir, name) });
  }
  const serve = (name: string) => (res: HttpResponse) => {
    let body: Buffer;
    try {
      body = readFileSync(join(dir, name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') log.warn('console file unreadable', { file: join(dir, name), error: error instanceof Error ? error.message : String(error) });
      send(res, '503 Service Unavailable', 'text/plain; charset=utf-8', 'The console is not built: run `npm run build`.\n');
      return;
    }
    send(res, '200 OK', FILES[name] ?? 'application/octet-stream', body);
  };
  app.get('/console', serve('index.html'));
  app.get('/console/', serve('index.html'));
  for (const name of Object.keys(FILES)) app.get(`/console/${name}`, serve(name));
}
