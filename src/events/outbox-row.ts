// Owns the stored shape of an outbox event (DB.outbox and DB.outboxLanes) and the event read from it.
import type { EventPayload, OutboxEvent } from './types.js';

/**
 * One row of DB.outbox as stored: the event with its `data` as JSON text (`payload`). Decoding a whole comment payload
 * was most of a claim, and a channel the API key has not configured never reads it: `data` is parsed on first read
 * (`eventOf`). Rows written before schema 2 hold `data` itself and are read as they are.
 */
export type StoredEvent = Omit<OutboxEvent, 'data'> & ({ readonly payload: string; readonly data?: undefined } | { readonly payload?: undefined; readonly data: EventPayload });

/**
 * The event of a row, its `data` parsed when first read: an own, enumerable getter (a spread copies it). Built as one
 * literal, field by field: object rest and defineProperty were the top frame of a claim. `parsed`: the payload the
 * row's JSON text was made from, when this process appended it (then nothing is parsed).
 */
export function eventOf(row: StoredEvent, parsed?: EventPayload): OutboxEvent {
  const payload = row.payload;
  if (payload === undefined) return row;
  let data: EventPayload | undefined = parsed;
  return {
    type: row.type,
    apiKey: row.apiKey,
    organizationId: row.organizationId,
    documentId: row.documentId,
    seq: row.seq,
    ...(row.node === undefined ? {} : { node: row.node }),
    ...(row.recordedBy === undefined ? {} : { recordedBy: row.recordedBy }),
    id: row.id,
    actionType: row.actionType,
    source: row.source,
    createdAt: row.createdAt,
    attempts: row.attempts,
    get data(): EventPayload {
      return (data ??= JSON.parse(payload) as EventPayload);
    },
  };
}
