// Owns copying a string decoded from a stored record so that keeping it does not keep the record's text.

/**
 * A copy of `text` that holds nothing else. lmdb-js decodes a record's strings with msgpackr's native extraction: all
 * of a record's strings as one string, each handed out as a slice of it (a V8 sliced string, which keeps its parent).
 * Kept as a long-lived Map or Set key, a 31-character delivery target kept its whole job record's text alive, ~470 B
 * an entry where ~85 B was meant (bench/README.md, "Twentieth session: endpoint churn memory"). Re-encoding makes a
 * flat string of its own. For strings that outlive their record in memory; a request's own values need none.
 */
export function ownCopy(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}
