// Owns which events the delivery channels would act on, per API key and event type, remembered until a config changes.
import type { EventAudience, EventType } from '../events/types.js';
import type { DeliveryConfigStore } from '../tenant/delivery-config-store.js';
import type { Planner } from './channel.js';

/**
 * How many API keys the answers are kept for. Past it they are all dropped and asked again (five config reads per key
 * and type): a bound on memory for a server with many workspaces, not a cache policy worth more.
 */
const MAX_KEYS = 10_000;

/**
 * The outbox's audience (`Outbox.setAudience`): an event gets an outbox row only when some planner must plan it (a
 * channel that records events in the raising transaction says which of them it still needs planned: `dispatches`).
 * Every comment asks, so the answers are kept; they are dropped whenever a delivery config is written on this process
 * (before the write and again after it commits, so an answer read in between cannot outlive the change) or, in a
 * cluster, when the applier brings in another node's (src/replicated-caches.ts).
 */
export class DeliveryAudience implements EventAudience {
  private readonly byKey = new Map<string, Map<EventType, boolean>>();

  constructor(private readonly configs: DeliveryConfigStore, private readonly planners: readonly Planner[]) {
    configs.onChanged(() => this.forget());
  }

  wants(apiKey: string, type: EventType): boolean {
    let byType = this.byKey.get(apiKey);
    const known = byType?.get(type);
    if (known !== undefined) return known;
    const wanted = this.configs.memoized(() => this.planners.some((planner) => (planner.dispatches === undefined ? planner.wants(apiKey, type) : planner.dispatches(apiKey, type))));
    if (byType === undefined) {
      if (this.byKey.size >= MAX_KEYS) this.byKey.clear();
      this.byKey.set(apiKey, (byType = new Map()));
    }
    byType.set(type, wanted);
    return wanted;
  }

  /** Drops every answer: the next event of each key and type asks the planners again. */
  forget(): void {
    this.byKey.clear();
  }
}
