// Owns building the browser console (src/console/web) into dist/console with esbuild: run by `npm run build`.
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { packageRoot } from './serve.js';

/** Bundles the console into `outDir` (default dist/console): app.js (minified, with its libraries), index.html, app.css. */
export async function buildConsole(outDir = join(packageRoot(), 'dist', 'console')): Promise<string> {
  const web = join(packageRoot(), 'src', 'console', 'web');
  mkdirSync(outDir, { recursive: true });
  await build({
    entryPoints: [join(web, 'main.ts')],
    outfile: join(outDir, 'app.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    sourcemap: true,
    logLevel: 'warning',
  });
  copyFileSync(join(web, 'index.html'), join(outDir, 'index.html'));
  copyFileSync(join(web, 'app.css'), join(outDir, 'app.css'));
  return outDir;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildConsole().then(
    (dir) => process.stdout.write(`console built in ${dir}\n`),
    (error: unknown) => {
      process.stderr.write(`console build failed: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
