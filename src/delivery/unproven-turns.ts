// Owns the order in which API keys get the delivery runner's slots for unproven targets: least recently served first.

/** API keys whose last unproven attempt's start is remembered (a key forgotten counts as never served: first in line). */
const SERVED_KEYS_KEPT = 10_000;

/**
 * Unproven targets (never delivered to: src/delivery/proven-targets.ts) share a few slots. Taken in due order, sixteen
 * keys with sixteen new endpoints each that never answer held them for four rounds of 15 s, and a new workspace's
 * first webhook, due after theirs, waited 58 s (bench/README.md, "Twentieth session"). Here the keys go least
 * recently served first, one target each in turn, so a key that has not had a slot lately is next in line however
 * many keys fill them: it waits at most until the first attempt in them ends.
 */
export class UnprovenTurns {
  /** API key -> when it last started an unproven attempt (a sequence number), oldest first. */
  private readonly served = new Map<string, number>();
  private seq = 0;

  /** `found` (target -> API key, in due order) in turn order: a target of each key, least recently served key first, then a second of each... */
  *order(found: ReadonlyMap<string, string>): Generator<[target: string, apiKey: string]> {
    const byKey = new Map<string, string[]>();
    for (const [target, apiKey] of found) {
      const targets = byKey.get(apiKey);
      if (targets === undefined) byKey.set(apiKey, [target]);
      else targets.push(target);
    }
    const keys = [...byKey.keys()].sort((a, b) => (this.served.get(a) ?? 0) - (this.served.get(b) ?? 0));
    for (let round = 0, more = true; more; round++) {
      more = false;
      for (const apiKey of keys) {
        const target = byKey.get(apiKey)?.[round];
        if (target === undefined) continue;
        more = true;
        yield [target, apiKey];
      }
    }
  }

  /** `apiKey` started an unproven attempt: to the back of the line. */
  serve(apiKey: string): void {
    this.served.delete(apiKey);
    this.served.set(apiKey, ++this.seq);
    if (this.served.size > SERVED_KEYS_KEPT) this.served.delete(this.served.keys().next().value as string);
  }
}
