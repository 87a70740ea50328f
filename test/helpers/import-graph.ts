// Owns reading the import graph of the TypeScript sources and checking it against the layer rules of docs/architecture.md.
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';

/** A source file (path relative to the repository, posix separators) and its text. */
export interface SourceFile {
  readonly path: string;
  readonly text: string;
}

/** One edge of the graph: `from` imports `specifier`, which resolved to `to` (a repo path, or the bare package name). */
export interface ImportEdge {
  readonly from: string;
  readonly to: string;
  readonly specifier: string;
}

/** A folder prefix and what files under it may not import (folder prefixes or bare package names). */
export interface LayerRule {
  readonly files: readonly string[];
  readonly mayNotImport: readonly string[];
  readonly why: string;
}

/**
 * The layers of docs/architecture.md: edge (src/http, src/ws, src/edge) -> core (src/doc, src/tenant, src/events,
 * src/sync) -> adapters (src/store, src/auth). Type-only imports count: a type import is still a dependency a reader
 * follows, and a cycle of them says the two modules are one.
 */
export const LAYER_RULES: readonly LayerRule[] = [
  {
    files: ['src/doc/', 'src/tenant/', 'src/events/', 'src/sync/', 'src/store/', 'src/auth/'],
    mayNotImport: ['src/http/', 'src/ws/', 'src/edge/', 'src/server.ts', 'src/services.ts', 'src/main.ts', 'uWebSockets.js'],
    why: 'the core and the adapters never import the edge, uWebSockets.js or a composition root',
  },
  {
    files: ['src/store/', 'src/auth/'],
    mayNotImport: ['src/doc/', 'src/tenant/', 'src/events/'],
    why: 'adapters never import the core',
  },
  {
    files: ['src/doc/', 'src/events/', 'src/sync/', 'src/store/', 'src/auth/'],
    mayNotImport: ['src/delivery/', 'src/agents/', 'src/cluster/'],
    why: 'delivery, agents and the cluster plug into the core through the outbox and ports wired in src/server.ts',
  },
  {
    files: ['src/delivery/outbound/', 'src/cluster/'],
    mayNotImport: ['src/http/', 'src/ws/', 'src/edge/', 'uWebSockets.js'],
    why: 'outbound clients and the cluster layer are adapters, not edges',
  },
  { files: ['src/ws/'], mayNotImport: ['src/http/'], why: 'the two edges share code through src/edge, not each other' },
  { files: ['src/http/'], mayNotImport: ['src/ws/'], why: 'the two edges share code through src/edge, not each other' },
];

/** Every .ts file under `dir` (relative to `root`), in path order. */
export function readSources(root: string, dir: string): SourceFile[] {
  const files: SourceFile[] = [];
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = join(at, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts')) files.push({ path: relative(root, full).split(sep).join('/'), text: readFileSync(full, 'utf8') });
    }
  };
  walk(join(root, dir));
  return files;
}

// One pass over strings and comments, so a `/*` inside a string or a line comment (`/sync/*`) opens nothing.
const STRING_OR_COMMENT = /('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`)|\/\/[^\n]*|\/\*[\s\S]*?\*\//g;

/** The text with comments removed and strings kept (module specifiers are strings). */
function withoutComments(text: string): string {
  return text.replace(STRING_OR_COMMENT, (match, literal: string | undefined) => literal ?? (match.startsWith('/*') ? ' ' : ''));
}

// `import x from '…'`, `import type {…} from '…'`, `export {…} from '…'`, `export * from '…'`, `import '…'`, `import('…')`.
const STATIC = /(?:^|[;\s])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/g;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The module specifiers a file imports or re-exports, in order of appearance. */
export function specifiersOf(text: string): string[] {
  const code = withoutComments(text);
  const found: Array<[number, string]> = [];
  for (const pattern of [STATIC, DYNAMIC]) {
    for (const match of code.matchAll(pattern)) found.push([match.index, match[1] as string]);
  }
  return found.sort((a, b) => a[0] - b[0]).map(([, specifier]) => specifier);
}

/** Relative specifiers resolve to a repo path (NodeNext spells `./x.js` for `./x.ts`); bare ones stay package names. */
export function resolve(from: string, specifier: string): string {
  if (!specifier.startsWith('.')) return specifier.startsWith('node:') ? specifier : specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');
  const joined = posix.normalize(posix.join(posix.dirname(from), specifier));
  return joined.endsWith('.js') ? `${joined.slice(0, -3)}.ts` : joined;
}

export function edgesOf(files: readonly SourceFile[]): ImportEdge[] {
  return files.flatMap((file) => specifiersOf(file.text).map((specifier) => ({ from: file.path, to: resolve(file.path, specifier), specifier })));
}

const under = (path: string, prefix: string): boolean => (prefix.endsWith('/') ? path.startsWith(prefix) : path === prefix);

/** Each import that breaks a rule, as "from -> specifier (why)". */
export function layerViolations(edges: readonly ImportEdge[], rules: readonly LayerRule[] = LAYER_RULES): string[] {
  const violations: string[] = [];
  for (const edge of edges) {
    for (const rule of rules) {
      if (rule.files.some((prefix) => under(edge.from, prefix)) && rule.mayNotImport.some((prefix) => under(edge.to, prefix))) {
        violations.push(`${edge.from} imports ${edge.specifier} (${rule.why})`);
      }
    }
  }
  return violations;
}

/** The area of a repo path: its folder under src/ (`src/doc`), or the file itself for files at the top of src/. */
export function areaOf(path: string): string {
  const parts = path.split('/');
  return parts.length > 2 ? parts.slice(0, 2).join('/') : path;
}

const isLocal = (path: string): boolean => path.startsWith('src/') || path.startsWith('test/') || path.startsWith('bench/');

/** Every import cycle among the files (strongly connected components of more than one file, or a self-import). */
export function importCycles(edges: readonly ImportEdge[]): string[][] {
  return cyclesOf(edges.filter((edge) => isLocal(edge.to)).map((edge) => [edge.from, edge.to] as const));
}

/**
 * Every cycle among areas (src/doc, src/events, ...): two folders importing each other are one module in two places,
 * even when no single file imports back (events/types.ts -> doc/annotations/model.ts while doc/annotations/events.ts
 * -> events/types.ts). Imports inside one area are free.
 */
export function areaCycles(edges: readonly ImportEdge[]): string[][] {
  return cyclesOf(
    edges
      .filter((edge) => isLocal(edge.to) && areaOf(edge.from) !== areaOf(edge.to))
      .map((edge) => [areaOf(edge.from), areaOf(edge.to)] as const),
  );
}

function cyclesOf(pairs: ReadonlyArray<readonly [string, string]>): string[][] {
  const next = new Map<string, Set<string>>();
  for (const [from, to] of pairs) {
    let targets = next.get(from);
    if (targets === undefined) next.set(from, (targets = new Set()));
    targets.add(to);
  }
  // Tarjan's algorithm, iterative so a deep chain of imports cannot overflow the stack.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let counter = 0;
  for (const start of [...next.keys()].sort()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; targets: Iterator<string> }> = [];
    const enter = (node: string): void => {
      index.set(node, counter);
      low.set(node, counter++);
      stack.push(node);
      onStack.add(node);
      work.push({ node, targets: (next.get(node) ?? new Set<string>()).values() });
    };
    enter(start);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: string; targets: Iterator<string> };
      const step = frame.targets.next();
      if (!step.done) {
        const target = step.value;
        if (!index.has(target)) enter(target);
        else if (onStack.has(target)) low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(target) as number));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string | undefined;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      if (component.length > 1 || next.get(frame.node)?.has(frame.node) === true) cycles.push(component.sort());
    }
  }
  return cycles;
}
