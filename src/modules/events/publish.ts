import type { Db } from '../../db/client.ts';
import type { SqlPart } from '../../db/sql-part.ts';
import { analyticsInsert, recordEvents, type AnalyticsEvent } from '../analytics/events.ts';
import type { EventType, TransientEventType } from './types.ts';

/**
 * Where every replica hears of new events: a stored event's id, or a transient event's JSON. The
 * commit trigger `events_commit_order` (its migration) names this channel too.
 */
export const EVENTS_CHANNEL = 'agentplane_events';

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
 * Stores events, in the caller's transaction when given one (they commit, get their ids and are
 * heard with the change they describe) or as one statement of their own.
 *
 * Event ids become visible in increasing order: a reader that has seen id N has seen every id below
 * it that will ever exist, which is what makes `id > Last-Event-ID` lose nothing. An event is
 * inserted with a provisional (negative) id; the deferred trigger `events_commit_order` (see its
 * migration) draws the final id when the transaction commits, under a lock held only for the
 * commit, fans the event out to webhooks and notifies every replica. (A sequence drawn at insert
 * would let a slow transaction commit a lower id after a faster one's higher id was read; a lock
 * from the insert to the commit made every transaction storing events wait for the others.)
 * `analytics` are stored in the same statement (or alone, with no events).
 */
export async function publish(db: Db, events: NewEvent | NewEvent[], also: { analytics?: readonly AnalyticsEvent[] } = {}): Promise<void> {
  const list = Array.isArray(events) ? events : [events];
  const analytics = also.analytics ?? [];
  if (list.length === 0) return recordEvents(db, analytics);
  const insert = eventsInsert(list, 1);
  // The analytics events of the same change ride along in the statement's WITH: one round trip.
  const alongside = analytics.length ? analyticsInsert(analytics, 1 + insert.params.length) : undefined;
  await db.$executeRawUnsafe(`${alongside ? `WITH analytics AS (${alongside.sql}) ` : ''}${insert.sql}`, ...insert.params, ...(alongside?.params ?? []));
}

/**
 * The insert of `events` (see publish), its one parameter numbered `$first`, to stand alone or in
 * another statement's WITH. `data` is the SQL of each stored event's data, from `e.data` (its
 * JSON) and `e.ord` (its index in `events`): another part of the statement may fill in what only
 * it knows, such as the `seq` a message is given as it is inserted. `when`, SQL too, stores the
 * events only when it holds.
 */
export function eventsInsert(events: readonly NewEvent[], first: number, opts: { data?: string; when?: string } = {}): SqlPart {
  const rows = events.map((e, ord) => ({
    ord,
    type: e.type,
    organization_id: e.organizationId ?? null,
    session_id: e.sessionId ?? null,
    computer_id: e.computerId ?? null,
    data: e.data,
  }));
  // Inserted in `ord` order: the commit trigger numbers a transaction's events in that order.
  return {
    sql: `INSERT INTO events (id, organization_id, type, session_id, computer_id, data, created_at)
    SELECT -nextval('events_provisional_id_seq'),
           COALESCE(e.organization_id,
             (SELECT s.organization_id FROM sessions s WHERE s.id = e.session_id),
             (SELECT c.organization_id FROM computers c WHERE c.id = e.computer_id)),
           e.type, e.session_id, e.computer_id, ${opts.data ?? 'e.data'}, clock_timestamp()
    FROM jsonb_to_recordset($${first}::jsonb)
      AS e(ord int, type text, organization_id text, session_id text, computer_id text, data jsonb)
    ${opts.when ? `WHERE ${opts.when}` : ''}
    ORDER BY e.ord`,
    params: [JSON.stringify(rows)],
  };
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
