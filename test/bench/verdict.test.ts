// Tests the bench's target verdicts: ratios against each peer, and a reference at or below zero compared as a value, not a ratio.
import t from 'tap';
import { verdict, type Figure } from '../../bench/lib/report.js';

const retained = (server: Figure['server'], value: number): Figure => ({ bench: 'memory, small docs', metric: 'retained after eviction', unit: 'KB/doc', server, value, better: 'lower' });

t.test('a ratio within the target is met, one over it is missed', async (t) => {
  t.match(verdict([retained('plait', 0.4), retained('hocuspocus', 0.5), retained('y-websocket', 30)], 'memory, small docs', 'retained after eviction'), { met: true, detail: 'hocuspocus ×0.8, y-websocket ×0.0133' });
  t.match(verdict([retained('plait', 0.8), retained('hocuspocus', 0.5), retained('y-websocket', 30)], 'memory, small docs', 'retained after eviction'), { met: false });
});

t.test('a peer reading at or below zero is compared as a value: a negative reference no longer passes any "at most" target', async (t) => {
  const judged = verdict([retained('plait', 0.689), retained('hocuspocus', -0.297), retained('y-websocket', 36.7)], 'memory, small docs', 'retained after eviction');
  t.equal(judged?.met, false, 'Plait kept 0.689 KB a document; Hocuspocus kept nothing measurable');
  t.match(judged?.detail, /hocuspocus -0\.297 \(≤ 0: values compared\)/);
  t.equal(verdict([retained('plait', -0.5), retained('hocuspocus', -0.297), retained('y-websocket', 36.7)], 'memory, small docs', 'retained after eviction')?.met, true, 'below the reference: met');
});

t.test('a row without a target has no verdict; a missing peer is a miss', async (t) => {
  t.equal(verdict([retained('plait', 1)], 'memory, small docs', 'no such metric'), undefined);
  t.match(verdict([retained('plait', 0.1)], 'memory, small docs', 'retained after eviction'), { met: false, detail: /hocuspocus: missing/ });
});
