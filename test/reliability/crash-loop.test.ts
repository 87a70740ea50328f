// Tests issue 10's crash-restart loop at a small size: SIGKILL under mixed REST and sync load loses nothing acknowledged.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const SCRIPT = fileURLToPath(new URL('../../bench/crash-loop.ts', import.meta.url));

interface Figures {
  readonly kills: number;
  readonly ackedRest: number;
  readonly ackedComments: number;
  readonly ackedSyncChars: number;
  readonly lostRest: number;
  readonly lostComments: number;
  readonly lostSync: number;
}

t.test('2 SIGKILLs at random moments under REST and sync load: nothing acknowledged is lost', async (t) => {
  // The same script as the large run (bench/crash-loop.ts), in a process of its own, on the sources.
  const output = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['--import=tsx', SCRIPT, '--kills', '2', '--max-load-ms', '300', '--seed', '7', '--server', 'tsx'], { timeout: 110_000 }, (error, stdout, stderr) => {
      t.comment(stderr.trim());
      if (error !== null && stdout === '') reject(error);
      else resolve(stdout);
    });
  });
  const figures = JSON.parse(output) as Figures;
  t.equal(figures.kills, 2);
  t.ok(figures.ackedRest > 0 && figures.ackedComments > 0 && figures.ackedSyncChars > 0, `acknowledged: ${figures.ackedRest} stores, ${figures.ackedComments} threads, ${figures.ackedSyncChars} synced characters`);
  t.equal(figures.lostRest, 0, 'every acknowledged CRDT add is there after each restart');
  t.equal(figures.lostComments, 0, 'every acknowledged comment thread is there');
  t.equal(figures.lostSync, 0, 'the synced text acknowledged as committed is there');
});
