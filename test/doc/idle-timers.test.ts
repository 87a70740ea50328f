// Tests src/doc/idle-timers.ts: one timer per idle stretch, due only once the whole delay has passed since the last idle.
import t from 'tap';
import { IdleTimers, type IdleTimed } from '../../src/doc/idle-timers.js';

const MS = 40;

interface Doc extends IdleTimed {
  busy: boolean;
}

/** Timers whose `due` resolves the promise `next()` hands out, with the time it came. */
function timers(): { timers: IdleTimers<Doc>; next: () => Promise<number>; dues: () => number } {
  let dues = 0;
  let resolve: ((at: number) => void) | undefined;
  const idle = new IdleTimers<Doc>(
    MS,
    () => {
      dues++;
      resolve?.(performance.now());
    },
    (doc) => !doc.busy,
  );
  return { timers: idle, next: () => new Promise((done) => (resolve = done)), dues: () => dues };
}

// The idle timers are unref'd (an idle document must not keep a process alive): this keeps the test's alive.
const keepAlive = setInterval(() => undefined, 60_000);
t.teardown(() => clearInterval(keepAlive));

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

t.test('a document that goes idle again and again keeps one timer, due once the delay has passed since the last time', async (t) => {
  const { timers: idle, next, dues } = timers();
  const doc: Doc = { idleAt: 0, busy: false };
  const due = next();
  idle.wentIdle('a', doc);
  const armed = doc.timer;
  const first = doc.idleAt;
  // Used and idle again every turn for half the delay: the timer armed first stays the only one.
  let kept = true;
  while (performance.now() - first < MS / 2) {
    await turn();
    idle.wentIdle('a', doc);
    kept &&= doc.timer === armed;
  }
  t.ok(kept, 'the timer armed first stayed armed, the only one');
  const last = doc.idleAt;
  const at = await due;
  t.ok(at - last >= MS - 1, `due ${(at - last).toFixed(1)} ms after the last idle, not ${(at - first).toFixed(1)} after the first`);
  t.equal(dues(), 1);
  t.equal(doc.timer, undefined);
});

t.test('a document busy when its timer fires is handed to `due` at once (its check finds it busy); stop() disarms', async (t) => {
  const { timers: idle, next, dues } = timers();
  const doc: Doc = { idleAt: 0, busy: false };
  const due = next();
  idle.wentIdle('a', doc);
  doc.busy = true;
  await due;
  t.equal(dues(), 1);
  t.equal(doc.timer, undefined, 'no timer while busy: the next idle arms one');
  const stopped: Doc = { idleAt: 0, busy: false };
  idle.wentIdle('b', stopped);
  idle.stop(stopped);
  t.equal(stopped.timer, undefined);
  doc.busy = false;
  const again = next();
  idle.wentIdle('a', doc);
  await again;
  t.equal(dues(), 2, 'only the document not stopped came due');
});
