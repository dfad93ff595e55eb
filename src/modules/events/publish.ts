import type { Db } from '../../db/client.ts';
import type { EventType, TransientEventType } from './types.ts';

/** Where every replica hears of new events: a stored event's id, or a transient event's JSON. */
export const EVENTS_CHANNEL = 'agentplane_events';

/**
 * Held from drawing an event id until the transaction commits, so event ids become visible in
 * increasing order: a reader that has seen id N has seen every id below it that will ever exist,
 * which is what makes `id > Last-Event-ID` lose nothing. (A sequence alone hands out ids at insert
 * time, and a slow transaction would commit a lower id after a faster one's higher id was read.)
 */
const EVENT_ORDER_LOCK = 0x6170_6576; // "apev"

/** PostgreSQL's limit on a NOTIFY payload is 8000 bytes; transient events stay well under it. */
const TRANSIENT_MAX_BYTES = 7000;

export interface NewEvent {
  type: EventType;
  /** Omitted: the organization of the event's session, else of its computer. */
  organizationId?: string;
  sessionId?: string;
  computerId?: string;
  data: Record<string, unknown>;
}

/**
 * Stores events and announces them to every replica, in the caller's transaction when given one
 * (they commit, and are heard, with the change they describe) or as one statement of their own.
 * The lock, the insert and the notification are one statement, so the lock also holds for a
 * caller outside any transaction.
 */
export async function publish(db: Db, events: NewEvent | NewEvent[]): Promise<void> {
  const list = Array.isArray(events) ? events : [events];
  if (list.length === 0) return;
  const rows = JSON.stringify(
    list.map((e, ord) => ({
      ord,
      type: e.type,
      organization_id: e.organizationId ?? null,
      session_id: e.sessionId ?? null,
      computer_id: e.computerId ?? null,
      data: e.data,
    })),
  );
  await db.$executeRaw`
    WITH ordered AS MATERIALIZED (SELECT pg_advisory_xact_lock(${EVENT_ORDER_LOCK}::bigint)),
    inserted AS (
      INSERT INTO events (organization_id, type, session_id, computer_id, data, created_at)
      SELECT COALESCE(e.organization_id,
               (SELECT s.organization_id FROM sessions s WHERE s.id = e.session_id),
               (SELECT c.organization_id FROM computers c WHERE c.id = e.computer_id)),
             e.type, e.session_id, e.computer_id, e.data, clock_timestamp()
      FROM ordered, jsonb_to_recordset(${rows}::jsonb)
        AS e(ord int, type text, organization_id text, session_id text, computer_id text, data jsonb)
      ORDER BY e.ord
      RETURNING id)
    SELECT pg_notify(${EVENTS_CHANNEL}, max(id)::text) FROM inserted`;
}

export interface TransientEvent {
  type: TransientEventType;
  organizationId: string;
  sessionId?: string;
  computerId?: string;
  data: Record<string, unknown>;
}

/**
 * Announces events to the streams connected right now, without storing them (model text and
 * command output as they stream): they are not resumable, and what they carried arrives again in
 * the stored message. Several events are one statement (one round trip), heard in their order.
 */
export async function publishTransient(db: Db, events: TransientEvent | TransientEvent[]): Promise<void> {
  const payloads = (Array.isArray(events) ? events : [events]).map((event) => {
    const payload = JSON.stringify(event);
    if (Buffer.byteLength(payload) > TRANSIENT_MAX_BYTES) throw new Error(`transient event ${event.type} exceeds ${TRANSIENT_MAX_BYTES} bytes`);
    return payload;
  });
  if (payloads.length === 1) await db.$executeRaw`SELECT pg_notify(${EVENTS_CHANNEL}, ${payloads[0]})`;
  else if (payloads.length > 1) {
    await db.$executeRaw`
      SELECT pg_notify(${EVENTS_CHANNEL}, p)
      FROM jsonb_array_elements_text(${JSON.stringify(payloads)}::jsonb) WITH ORDINALITY AS t(p, n) ORDER BY n`;
  }
}
