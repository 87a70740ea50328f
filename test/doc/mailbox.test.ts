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
