// Tests the actor mailbox: one task at a time in order, bounded capacity with RESOURCE_EXHAUSTED.
import t from 'tap';
import { AppError } from '../../src/errors.js';
import { Mailbox } from '../../src/doc/mailbox.js';

t.test('tasks run one at a time in arrival order, async ones included', async (t) => {
  const failures: unknown[] = [];
  const mailbox = new Mailbox(100, { taskFailed: (error) => failures.push(error) });
  const order: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const first = mailbox.ask(async () => {
    order.push('first:start');
    await gate;
    order.push('first:end');
    return 1;
  });
  const second = mailbox.ask(() => {
    order.push('second');
    return 2;
  });
  mailbox.tell(() => {
    throw new Error('told task failed');
  });
  mailbox.tell(() => order.push('third'));
  t.same(order, ['first:start'], 'the first task started synchronously and holds the loop');
  release();
  t.same(await Promise.all([first, second]), [1, 2]);
  await mailbox.whenIdle();
  t.same(order, ['first:start', 'first:end', 'second', 'third']);
  t.equal(failures.length, 1, 'a failing told task is reported and the loop carries on');
  t.ok(mailbox.idle);
});

t.test('a full mailbox refuses with RESOURCE_EXHAUSTED unless forced', async (t) => {
  const mailbox = new Mailbox(2, { taskFailed: (error) => t.fail(String(error)) });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const blocker = mailbox.ask(() => gate);
  t.ok(mailbox.tell(() => undefined), 'one queued');
  t.ok(mailbox.tell(() => undefined), 'two queued');
  t.notOk(mailbox.tell(() => undefined), 'a third is refused');
  const refused = await mailbox.ask(() => 'never').then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(refused instanceof AppError && refused.status === 'RESOURCE_EXHAUSTED', 'ask rejects RESOURCE_EXHAUSTED');
  t.ok(mailbox.tell(() => undefined, true), 'lifecycle tasks are forced in');
  t.equal(mailbox.size, 3);
  release();
  await blocker;
  await mailbox.whenIdle();
  t.equal(mailbox.size, 0);
});

t.test('a task told to an idle mailbox runs inside tell; what it queues, a failure and a promise it returns keep the order', async (t) => {
  const failures: unknown[] = [];
  const mailbox = new Mailbox(100, { taskFailed: (error) => failures.push(error) });
  const order: string[] = [];
  mailbox.tell(() => {
    order.push('outer');
    mailbox.tell(() => order.push('queued by outer'));
    t.notOk(mailbox.idle, 'busy while it runs');
    order.push('outer:end');
  });
  t.same(order, ['outer', 'outer:end', 'queued by outer'], 'ran inside tell, then what it queued');
  t.ok(mailbox.idle);

  mailbox.tell(() => {
    throw new Error('idle task failed');
  });
  t.equal(failures.length, 1, 'a throwing task is reported');
  t.ok(mailbox.idle, 'and the mailbox is idle again');

  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  mailbox.tell(async () => {
    order.push('async:start');
    await gate;
    order.push('async:end');
    throw new Error('async task failed');
  });
  mailbox.tell(() => order.push('after async'));
  const answer = mailbox.ask(() => 'asked');
  t.notOk(mailbox.idle, 'a returned promise holds the mailbox');
  t.same(order.slice(3), ['async:start']);
  release();
  t.equal(await answer, 'asked');
  await mailbox.whenIdle();
  t.same(order.slice(3), ['async:start', 'async:end', 'after async']);
  t.equal(failures.length, 2, 'the rejected promise is reported');
  t.ok(mailbox.idle);
});
