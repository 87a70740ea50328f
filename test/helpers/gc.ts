// Test helper: a full garbage collection on demand, for tests that check an object is no longer kept (WeakRef).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A full collection, when the test process can ask for one. */
export function collectGarbage(): (() => void) | undefined {
  setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('gc');
  return typeof gc === 'function' ? () => void gc() : undefined;
}
