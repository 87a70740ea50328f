// Checks the system clock's timers: they fire, a cancel stops them, unref'd ones do not hold the process, and a cancel leaves nothing behind in Node's timer lists.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { systemClock } from '../src/clock.js';

const CLOCK = fileURLToPath(new URL('../src/clock.ts', import.meta.url));

/** Runs `body` in a child node that can read Node's internal timer lists (`timerListMap`, one entry per distinct delay). */
function inChild(body: string): { status: number | null; out: string; err: string } {
  const script = `
    import { createRequire } from 'node:module';
    const { timerListMap } = createRequire(import.meta.url)('internal/timers');
    const { clearTimer, systemClock } = await import(${JSON.stringify(CLOCK)});
    const lists = () => Object.keys(timerListMap).length;
    ${body}`;
  const child = spawnSync(process.execPath, ['--expose-internals', '--import=tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  return { status: child.status, out: child.stdout.trim(), err: child.stderr };
}

t.test('a cancelled unref timer leaves no list behind (a closed socket\'s token deadline)', (t) => {
  // Each delay is distinct to the millisecond, as a token deadline's is; Node keeps such a list for the whole delay
  // when an unref'd timer is cleared, unless the timer is ref'd at the clear.
  const child = inChild(`
    const before = lists();
    for (let i = 0; i < 500; i++) systemClock.setTimer(() => { throw new Error('fired after cancel'); }, 172_800_000 - i, { unref: true })();
    for (let i = 0; i < 500; i++) systemClock.setTimer(() => { throw new Error('fired after cancel'); }, 100_000 + i)();
    // The delivery loops' own timers (a re-armed wake-up, unref'd) go through clearTimer.
    for (let i = 0; i < 500; i++) clearTimer(setTimeout(() => { throw new Error('fired after clear'); }, 200_000 + i).unref());
    console.log(lists() - before);`);
  t.equal(child.status, 0, child.err);
  t.equal(child.out, '0', 'timer lists left after 1500 cancelled timers');
  t.end();
});

t.test('an unref timer does not keep the process alive, and a cancel after it fired is harmless', (t) => {
  const child = inChild(`
    systemClock.setTimer(() => {}, 60_000, { unref: true });
    const cancel = systemClock.setTimer(() => { console.log('fired'); cancel(); }, 5, { unref: true });
    setTimeout(() => {}, 50);`);
  t.equal(child.status, 0, child.err);
  t.equal(child.out, 'fired', 'the short timer fired once and the pending 60 s one did not hold the exit');
  t.end();
});

t.test('a timer fires once; a cancelled one never does', async (t) => {
  const fired: string[] = [];
  const cancel = systemClock.setTimer(() => fired.push('cancelled'), 1);
  cancel();
  await new Promise<void>((resolve) => systemClock.setTimer(() => {
    fired.push('kept');
    resolve();
  }, 5));
  // The cancelled timer was due first; had it survived the cancel it would be in the list ahead of 'kept'.
  t.same(fired, ['kept']);
});
