// Tests the direction of imports in src/ (edge -> core -> adapters, never back) and that no import cycle exists.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { areaCycles, edgesOf, importCycles, layerViolations, readSources, specifiersOf, type SourceFile } from './helpers/import-graph.js';

const root = fileURLToPath(new URL('..', import.meta.url));

t.test('no file of the core or the adapters imports the edge, and the edges do not import each other', async (t) => {
  const sources = readSources(root, 'src');
  t.ok(sources.length > 50, `read the sources (${sources.length} files)`);
  const paths = new Set(sources.map((file) => file.path));
  const unresolved = edgesOf(sources).filter((edge) => edge.to.startsWith('src/') && !paths.has(edge.to));
  t.same(unresolved, [], 'every relative import resolves to a source file, so no edge is silently lost');
  t.same(layerViolations(edgesOf(sources)), [], 'every import points edge -> core -> adapters');
});

t.test('src has no import cycle, between files or between folders', async (t) => {
  const edges = edgesOf(readSources(root, 'src'));
  t.same(importCycles(edges), [], 'between files');
  t.same(areaCycles(edges), [], 'between folders of src/ (and the files at its top)');
});

t.test('the check catches the imports that pointed back before issue 11', async (t) => {
  // The four back-pointing imports the issue found, spelled as they were, plus the events <-> annotations loop.
  const before: SourceFile[] = [
    { path: 'src/doc/actor.ts', text: "import {\n  writeAwareness,\n  type ClientMessage,\n} from '../ws/protocol.js';" },
    { path: 'src/doc/fanout.ts', text: "import { writeUpdate } from '../ws/protocol.js';" },
    { path: 'src/ws/behavior.ts', text: "// Owns the /sync/* WebSocket endpoint\nimport { writeError, type ResponseState } from '../http/reply.js';" },
    { path: 'src/events/types.ts', text: "import type { AnnotationView } from '../doc/annotations/model.js';" },
    { path: 'src/doc/annotations/events.ts', text: "import type { CommentPayload, EventDraft } from '../../events/types.js';\nimport { commentView } from './model.js';" },
    { path: 'src/doc/annotations/model.ts', text: "import type { DocumentKey } from '../peer.js';" },
    { path: 'src/store/env.ts', text: "import type { Outbox } from '../events/outbox.js';" },
    { path: 'src/tenant/x.ts', text: "const uws = await import('uWebSockets.js');" },
  ];
  const edges = edgesOf(before);
  t.same(layerViolations(edges), [
    'src/doc/actor.ts imports ../ws/protocol.js (the core and the adapters never import the edge, uWebSockets.js or a composition root)',
    'src/doc/fanout.ts imports ../ws/protocol.js (the core and the adapters never import the edge, uWebSockets.js or a composition root)',
    'src/ws/behavior.ts imports ../http/reply.js (the two edges share code through src/edge, not each other)',
    'src/store/env.ts imports ../events/outbox.js (adapters never import the core)',
    'src/tenant/x.ts imports uWebSockets.js (the core and the adapters never import the edge, uWebSockets.js or a composition root)',
  ]);
  t.same(areaCycles(edges), [['src/doc', 'src/events']], 'the events <-> annotations loop between folders');
  t.same(importCycles(edges), [], 'which no single pair of files closes');
  const loop = edgesOf([...before, { path: 'src/doc/annotations/model.ts', text: "import type { EventType } from '../../events/types.js';" }]);
  t.same(importCycles(loop), [['src/doc/annotations/model.ts', 'src/events/types.ts']], 'a loop between two files is found too');
});

t.test('specifiers are read from every import form, and not from comments or strings that merely mention one', async (t) => {
  const text = [
    "import a from './a.js';",
    "import type { B } from '../b.js';",
    "import './side-effect.js';",
    "export { c } from './c.js';",
    "export * from './d.js';",
    "export type { E } from './e.js';",
    "const f = await import('./f.js');",
    "// import g from './g.js'; and a path like /sync/* in a comment opens no block comment",
    "const s = '/* not a comment */'; import i from './i.js';",
    "/* export * from './h.js'; */",
    "import {\n  x,\n  y,\n} from './multi.js';",
  ].join('\n');
  t.same(specifiersOf(text), ['./a.js', '../b.js', './side-effect.js', './c.js', './d.js', './e.js', './f.js', './i.js', './multi.js']);
});
