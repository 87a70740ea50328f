// Owns opening a Store in tests that need the lmdb-js root under it (transaction ids, a commit made to fail).
import type { RootDatabase } from 'lmdb';
import { Store } from '../../src/store/env.js';

const roots = new WeakMap<Store, RootDatabase>();

/** Store.open, remembering the root the store writes through (the store keeps it private). */
export function openStore(path: string): Store {
  let captured: RootDatabase | undefined;
  const store = Store.open(path, { transactions: (root) => (captured = root) });
  if (captured !== undefined) roots.set(store, captured);
  return store;
}

export function rootOf(store: Store): RootDatabase {
  const root = roots.get(store);
  if (root === undefined) throw new Error('open the store with openStore() to reach its root');
  return root;
}

/** Runs `work` and answers how many `Store.transaction` calls it made (the store's method is put back after). */
export async function countingTransactions<T>(store: Store, work: () => Promise<T>): Promise<{ result: T; transactions: number }> {
  let transactions = 0;
  const transaction = store.transaction.bind(store);
  store.transaction = ((body) => {
    transactions++;
    return transaction(body);
  }) as typeof store.transaction;
  try {
    return { result: await work(), transactions };
  } finally {
    store.transaction = transaction;
  }
}
