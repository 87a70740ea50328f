// Owns bundling the server's sources into dist/bundle with esbuild, minified: what `npm start` runs (run by `npm run build`).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { packageRoot } from './console/serve.js';

/**
 * Entry points, all written flat into the bundle folder: `main` is the process; `agents/worker` is the piscina worker
 * (src/agents/pool.ts finds it as `./worker.js` beside the code that starts it); `config`, `log` and `server` are what
 * a host embedding the server imports (the bench host does).
 */
const ENTRIES = ['main', 'agents/worker', 'config', 'log', 'server'];

/**
 * Left as packages: native addons and packages that find their own files at run time (uWebSockets.js and lmdb load a
 * .node binary; piscina starts its worker from its own folder; playwright-core reads its browsers' registry), and the
 * agents' provider SDKs, which are loaded only when an agent calls a provider.
 */
// undici stays external too: bundled by esbuild, the outbound client's requests never completed (the delivery bench
// hung on the bundle and passed on dist/src), and it is imported lazily either way.
export const EXTERNAL = ['uWebSockets.js', 'lmdb', 'piscina', 'playwright-core', 'openai', '@anthropic-ai/sdk', '@modelcontextprotocol/sdk', 'nodemailer', 'undici'];

/**
 * Why a bundle: V8 keeps every loaded module's source text for lazy compilation, and each module has its own record
 * and scope. The compiled tree is ~300 modules at start; one minified bundle (with the lazily imported parts split
 * into chunks loaded at first use) cut idle anonymous memory by ~5 MB (bench/README.md, "Baseline memory").
 * The output folder must sit inside the package (dist/bundle), so the external packages resolve from its node_modules.
 * Code splitting keeps dynamic imports (undici, nats, nodemailer…) out of the start-up chunk; every chunk sits in
 * the same folder, so `import.meta.url`-relative paths (the agents' worker) resolve as they do in dist/src.
 */
export async function buildBundle(outDir = join(packageRoot(), 'dist', 'bundle')): Promise<string> {
  const srcDir = join(packageRoot(), 'src');
  rmSync(outDir, { recursive: true, force: true });
  await build({
    // From the TypeScript sources, as tsx runs them in tests (esbuild reads tsconfig.json for the class-field semantics).
    entryPoints: ENTRIES.map((name) => join(srcDir, `${name}.ts`)),
    tsconfig: join(packageRoot(), 'tsconfig.json'),
    outdir: outDir,
    entryNames: '[name]',
    chunkNames: 'chunk-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    minify: true,
    // Not keepNames: it wraps every named function in a call that sets its name (memory and CPU per closure made).
    // Nothing in Plait reads a constructor's name; errors carry explicit names. For readable stack traces run node
    // with --enable-source-maps (the maps are written beside the chunks).
    sourcemap: 'linked',
    external: EXTERNAL,
    // CommonJS packages in the bundle call require() for node's built-ins; ESM has no require of its own.
    banner: { js: "import { createRequire as __plaitRequire } from 'node:module'; const require = __plaitRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  return outDir;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildBundle().then(
    (dir) => process.stdout.write(`server bundled in ${dir}\n`),
    (error: unknown) => {
      process.stderr.write(`server bundle failed: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
