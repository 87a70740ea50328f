// Owns the expiry of silent awareness states for every loaded document: one process-wide timer, not one per document.
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';

/** y-protocols checks every outdatedTimeout / 10 (3 s) and drops states not renewed for outdatedTimeout (30 s). */
const SWEEP_MS = Math.floor(awarenessProtocol.outdatedTimeout / 10);

/**
 * What an Awareness reads of its Y.Doc: `clientID` (the server's own id; the server announces no state) and
 * `on('destroy')`, which releaseAwareness makes unnecessary. A Y.Doc per document's awareness cost ~2 KB each, and a
 * single shared Y.Doc would keep every awareness reachable through its destroy listeners; this stand-in is both.
 */
const SERVER_DOC = { clientID: new Y.Doc().clientID, on: (): void => undefined } as unknown as Y.Doc;

/** Each awareness with who to tell when expiring its states fails (the sweep runs from a timer: it must not throw). */
const tracked = new Map<awarenessProtocol.Awareness, (error: unknown) => void>();
let timer: NodeJS.Timeout | undefined;

/**
 * A server-side awareness (no state of its own) whose expiry runs in the shared sweep. y-protocols gives each
 * Awareness its own 3 s interval; thousands of loaded documents would mean thousands of timers.
 */
export function createAwareness(onError: (error: unknown) => void): awarenessProtocol.Awareness {
  const awareness = new awarenessProtocol.Awareness(SERVER_DOC);
  clearInterval(awareness._checkInterval as NodeJS.Timeout);
  awareness.setLocalState(null);
  tracked.set(awareness, onError);
  if (timer === undefined) {
    timer = setInterval(sweep, SWEEP_MS);
    // Expiry must not keep the process alive.
    timer.unref();
  }
  return awareness;
}

/** Stops sweeping `awareness` and destroys it (the document is unloaded). */
export function releaseAwareness(awareness: awarenessProtocol.Awareness): void {
  tracked.delete(awareness);
  awareness.destroy();
  if (tracked.size === 0 && timer !== undefined) {
    clearInterval(timer);
    timer = undefined;
  }
}

/** What y-protocols' own interval does for remote states: remove those not renewed within outdatedTimeout. */
export function sweep(now = Date.now()): void {
  for (const [awareness, onError] of tracked) {
    try {
      expire(awareness, now);
    } catch (error) {
      onError(error);
    }
  }
}

function expire(awareness: awarenessProtocol.Awareness, now: number): void {
  const expired: number[] = [];
  awareness.meta.forEach((meta, clientId) => {
    if (clientId !== awareness.clientID && awarenessProtocol.outdatedTimeout <= now - meta.lastUpdated && awareness.states.has(clientId)) {
      expired.push(clientId);
    }
  });
  if (expired.length > 0) awarenessProtocol.removeAwarenessStates(awareness, expired, 'timeout');
}
