// Tests the store's replication port: what each committed transaction wrote is published once, in commit order, and acknowledged before the write resolves.
import t, { type Test } from 'tap';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import type { ReplicatedOp, Replication } from '../../src/store/replication.js';

/** A port that keeps what it is given and acknowledges when the test says so. */
class HeldPort implements Replication {
  readonly published: Array<readonly ReplicatedOp[]> = [];
  private readonly acks: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  private waiting: (() => void) | undefined;

  publish(ops: readonly ReplicatedOp[]): Promise<void> {
    this.published.push(ops);
    this.waiting?.();
    return new Promise((resolve, reject) => this.acks.push({ resolve, reject }));
  }

  /** Resolves once `count` messages were published. */
  async until(count: number): Promise<void> {
    while (this.published.length < count) await new Promise<void>((resolve) => (this.waiting = resolve));
  }

  ackAll(): void {
    for (const ack of this.acks.splice(0)) ack.resolve();
  }

  failAll(error: Error): void {
    for (const ack of this.acks.splice(0)) ack.reject(error);
  }
}

const open = (t: Test, port: Replication): Store => {
  const store = Store.open(t.testdir(), { replication: port });
  t.teardown(() => store.close());
  return store;
};

t.test('a transaction publishes its writes once committed and resolves only after the acknowledgement', async (t) => {
  const port = new HeldPort();
  const store = open(t, port);
  const db = store.records<{ n: number }>(DB.workspaces);
  let resolved = false;
  const written = store
    .transaction(() => {
      void db.put(['w1'], { n: 1 });
      void db.remove(['w0']);
    })
    .then(() => (resolved = true));
  await port.until(1);
  t.same(port.published[0], [[DB.workspaces, ['w1'], { n: 1 }], [DB.workspaces, ['w0']]], 'the put and the remove, in order');
  t.same(db.get(['w1']), { n: 1 }, 'committed locally before the publish');
  t.equal(resolved, false, 'not resolved before the acknowledgement');
  port.ackAll();
  await written;
  t.equal(resolved, true);
});

t.test('a transaction that throws publishes nothing; meta writes are never published', async (t) => {
  const port = new HeldPort();
  const store = open(t, port);
  const db = store.records<number>(DB.workspaces);
  await t.rejects(
    store.transaction(() => {
      void db.put(['x'], 1);
      throw new Error('refused');
    }),
    /refused/,
  );
  await store.transaction(() => void store.records<unknown>(DB.meta).put('local', true));
  const after = store.transaction(() => void db.put(['y'], 2));
  await port.until(1);
  port.ackAll();
  await after;
  t.same(port.published, [[[DB.workspaces, ['y'], 2]]], 'only the committed, replicated write');
  t.equal(db.get(['x']), undefined);
});

t.test('a group-commit batch is one message of its changes that wrote; a change that threw is left out', async (t) => {
  const port = new HeldPort();
  const store = open(t, port);
  const db = store.binary(DB.docUpdates);
  const told: unknown[] = [];
  const write = (key: string, fail: boolean) =>
    store.transactionGrouped({
      write: () => {
        void db.put([key], new Uint8Array([1, 2]));
        if (fail) throw new Error(`${key} refused`);
      },
      settle: (error) => told.push(error === undefined ? key : (error as Error).message),
    });
  write('a', false);
  write('b', true);
  write('c', false);
  await port.until(1);
  t.equal(port.published.length, 1, 'one message for the batch');
  t.same(
    port.published[0]?.map((op) => op[1]),
    [['a'], ['c']],
    'the writes of the changes that committed',
  );
  t.same(told, ['b refused'], 'the refused change is told at once; the others wait for the acknowledgement');
  port.ackAll();
  await store.group.settled();
  t.same(told, ['b refused', 'a', 'c']);
});

t.test('a publish that fails rejects the write (not acknowledged), and the group commit tells its changes', async (t) => {
  const port = new HeldPort();
  const store = open(t, port);
  const db = store.records<number>(DB.domains);
  const direct = store.transaction(() => void db.put(['k'], 1));
  let groupError: unknown;
  store.transactionGrouped({ write: () => void db.put(['g'], 1), settle: (error) => (groupError = error) });
  await port.until(2);
  port.failAll(new Error('cluster away'));
  await t.rejects(direct, /cluster away/);
  await store.group.settled();
  t.match(groupError, { message: 'cluster away' });
});

t.test('commits are published in commit order even when acknowledged out of order', async (t) => {
  const port = new HeldPort();
  const store = open(t, port);
  const db = store.records<number>(DB.domains);
  const writes = [1, 2, 3].map((n) => store.transaction(() => void db.put(['k'], n)));
  store.transactionGrouped({ write: () => void db.put(['k'], 4), settle: () => undefined });
  await port.until(4);
  t.same(
    port.published.map((ops) => ops[0]?.[2]),
    [1, 2, 3, 4],
    'the order the writes committed in',
  );
  port.ackAll();
  await Promise.all(writes);
});

t.test('applyReplicated writes without publishing, stores the position and tells listeners what changed', async (t) => {
  const port = new HeldPort();
  const store = open(t, port);
  const changes: string[][] = [];
  store.onReplicatedChange((changed) => changes.push([...changed]));
  await store.records<number>(DB.domains).put(['seed'], 0);
  await store.applyReplicated(
    [
      [DB.apiKeys, ['k1'], { workspaceId: 'w' }],
      [DB.domains, ['seed']],
    ],
    { key: 'applied', value: 7 },
  );
  t.same(store.records<unknown>(DB.apiKeys).get(['k1']), { workspaceId: 'w' });
  t.equal(store.records<number>(DB.domains).get(['seed']), undefined);
  t.equal(store.records<unknown>(DB.meta).get('applied'), 7, 'the position, in the same transaction');
  t.same(changes, [[DB.apiKeys, DB.domains]]);
  // The loose put above (outside a Store transaction) is published on its own; applied writes are not.
  await port.until(1);
  t.same(port.published, [[[DB.domains, ['seed'], 0]]]);
  port.ackAll();
  t.equal(store.holdsReplicatedRows(), true);
  await store.wipeReplicated();
  t.equal(store.holdsReplicatedRows(), false, 'wiped');
  t.equal(store.records<unknown>(DB.meta).get('applied'), 7, 'meta stays');
});

t.test('clearing a whole database refuses in cluster mode (the applier could not replay it) and works without', async (t) => {
  const store = open(t, new HeldPort());
  t.throws(() => store.records<number>(DB.domains).clearSync(), /not replicated/);
  const plain = Store.open(t.testdir());
  t.teardown(() => plain.close());
  t.doesNotThrow(() => plain.records<number>(DB.domains).clearSync(), 'no recording wrapper without a port');
});

t.test('a cluster cache opened without cluster mode is marked dirty (its writes will not be in the stream)', async (t) => {
  const dir = t.testdir();
  const first = Store.open(dir, { replication: new HeldPort() });
  first.records<unknown>(DB.meta).putSync('clusterCache', { stream: 's', dirty: false });
  await first.close();
  const alone = Store.open(dir);
  t.same(alone.records<unknown>(DB.meta).get('clusterCache'), { stream: 's', dirty: true });
  await alone.close();
});

t.test('while the port refuses, writes fail before they run: nothing commits, not even locally', async (t) => {
  const port = new HeldPort();
  let refusing: Error | undefined = new Error('cluster log unreachable');
  const store = Store.open(t.testdir(), { replication: Object.assign(port, { refusal: () => refusing }) });
  t.teardown(() => store.close());
  const db = store.records<number>(DB.domains);
  await t.rejects(store.transaction(() => void db.put(['r'], 1)), /unreachable/);
  let told: unknown;
  store.transactionGrouped({ write: () => void db.put(['g'], 1), settle: (error) => (told = error) });
  await store.group.settled();
  await new Promise<void>((resolve) => queueMicrotask(resolve));
  t.match(told, { message: 'cluster log unreachable' });
  t.equal(db.get(['r']), undefined);
  t.equal(db.get(['g']), undefined);
  t.same(port.published, [], 'nothing published');
  refusing = undefined;
  const later = store.transaction(() => void db.put(['r'], 2));
  await port.until(1);
  port.ackAll();
  await later;
  t.equal(db.get(['r']), 2, 'writes go ahead once the port stops refusing');
});
