// Tests that package-lock.json can drive `npm ci`: in step with package.json, and every dependency of a locked package locked too.
import { readFileSync } from 'node:fs';
import t from 'tap';

interface LockedPackage {
  readonly version?: string;
  readonly engines?: unknown;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly devDependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta?: Readonly<Record<string, { optional?: boolean }>>;
}

const root = new URL('../', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as LockedPackage & { name: string };
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as { packages: Readonly<Record<string, LockedPackage>> };

/** Where Node (and npm) finds `name` from the package at `path`: its own node_modules, then each parent's, then the top. */
function locate(path: string, name: string): string | undefined {
  let at = path;
  for (;;) {
    const candidate = `${at === '' ? '' : `${at}/`}node_modules/${name}`;
    if (lock.packages[candidate] !== undefined) return candidate;
    if (at === '') return undefined;
    const cut = at.lastIndexOf('/node_modules/');
    at = cut === -1 ? '' : at.slice(0, cut);
  }
}

t.test("the lock's root entry matches package.json (npm ci refuses otherwise)", async (t) => {
  const top = lock.packages[''] ?? {};
  t.same(top.dependencies, manifest.dependencies, 'dependencies');
  t.same(top.devDependencies, manifest.devDependencies, 'devDependencies');
  t.same(top.engines, manifest.engines, 'engines');
});

t.test('every dependency of every locked package, optional platform builds included, has a lock entry', async (t) => {
  // npm ci reports "Missing: <name>@ from lock file" for these, even for platforms other than this machine's.
  const missing: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    const wanted = { ...entry.dependencies, ...entry.optionalDependencies, ...(path === '' ? entry.devDependencies : {}) };
    for (const name of Object.keys(wanted)) if (locate(path, name) === undefined) missing.push(`${path || '(root)'} -> ${name}`);
  }
  t.same(missing, []);
});
