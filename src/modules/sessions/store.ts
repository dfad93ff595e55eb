import type { Db, Prisma } from '../../db/client.ts';
import type { SessionMessage, SessionStatus } from '../../generated/prisma/client.ts';
import { newId } from '../../lib/ids.ts';
import type { ContentBlock, MessageView, TokenUsage } from './schemas.ts';
import { MESSAGE_EXTRA_FIELDS } from './schemas.ts';
import type { AnalyticsEvent } from '../analytics/events.ts';
import type { NewEvent } from '../events/publish.ts';
import { SessionStateChanged, storeSessionChange, type MessageTurn, type SessionCharges } from './session-change.ts';
import { sessionEvents, type TurnOutcome } from './session-events.ts';

/**
 * What the agent runtime reads and writes of a session. Every function takes a Prisma client or a
 * transaction, so the runtime can group writes (a message and its usage) atomically.
 */

/** The whole history in order (oldest first), queued user messages included. */
export async function loadHistory(db: Db, sessionId: string): Promise<SessionMessage[]> {
  return db.sessionMessage.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } });
}

export interface NewMessage {
  role: MessageView['role'];
  content: ContentBlock[];
  parentId?: string;
  isError?: boolean;
  modelId?: string;
  reasoningEffort?: MessageView['reasoningEffort'];
  userMessageSource?: string;
  computerId?: string;
  /** User messages from the API are `queued` until a turn takes them. */
  queueStatus?: 'queued' | 'consumed';
  extra?: Partial<Pick<MessageView, (typeof MESSAGE_EXTRA_FIELDS)[number]>>;
}

/**
 * Appends a message and counts it on the session, with the usage of the model calls that produced
 * it (see chargeSession); returns the stored row. One statement (storeSessionChange), whatever it
 * carries: atomic without a transaction. With `turn`, a user message that begins its session's
 * turn, waits for one or queues behind one: SessionStateChanged when the session is not in the
 * state that expects, and nothing stored.
 */
export async function appendMessage(
  db: Db,
  sessionId: string,
  message: NewMessage,
  now: Date,
  usage: Partial<TokenUsage>[] = [],
  /** More for the same update of the session, events to publish after the message's, and analytics events to store with them. */
  also: { session?: SessionCharges['set']; events?: NewEvent[]; analytics?: readonly AnalyticsEvent[]; turn?: MessageTurn } = {},
): Promise<SessionMessage & { sessionStatus: SessionStatus }> {
  const row: Omit<SessionMessage, 'seq'> = {
    id: newId('msg'),
    sessionId,
    role: message.role,
    content: message.content as Prisma.JsonValue,
    queueStatus: message.queueStatus ?? null,
    computerId: message.computerId ?? null,
    parentId: message.parentId ?? null,
    userMessageSource: message.userMessageSource ?? null,
    isError: message.isError ?? null,
    modelId: message.modelId ?? null,
    reasoningEffort: message.reasoningEffort ?? null,
    extra: message.extra ? (message.extra as Prisma.JsonValue) : null,
    createdAt: now,
    updatedAt: now,
  };
  const stored = await storeSessionChange(db, sessionId, {
    message: row,
    charges: { messages: 1, usage, now, set: also.session },
    events: also.events,
    analytics: also.analytics,
    turn: also.turn,
  });
  if (!stored) throw new SessionStateChanged(sessionId);
  return { ...row, seq: stored.seq!, sessionStatus: stored.status };
}

/**
 * Marks the queued user messages consumed and returns them, oldest first: a turn takes every
 * message that arrived before it started; later ones wait for the next turn. A message queued
 * while the previous turn ran is moved to the end of the history (a new `seq`), so the history
 * reads in the order the agent saw it and a tool call is never separated from its result. The
 * caller publishes their `session.message.updated` events (sessionEvent.messageUpdated) with its own.
 */
export async function takeQueuedMessages(db: Db, sessionId: string, now: Date): Promise<SessionMessage[]> {
  const queued = await db.sessionMessage.findMany({ where: { sessionId, queueStatus: 'queued' }, orderBy: { seq: 'asc' } });
  const taken: SessionMessage[] = [];
  // One at a time, in order: nextval() in one multi-row UPDATE would not keep their order.
  for (const m of queued) {
    const [row] = await db.$queryRaw<{ seq: bigint }[]>`
      UPDATE session_messages SET queue_status = 'consumed', updated_at = ${now},
        seq = nextval(pg_get_serial_sequence('session_messages', 'seq'))
      WHERE id = ${m.id} AND queue_status = 'queued' RETURNING seq`;
    if (row) taken.push({ ...m, seq: row.seq, queueStatus: 'consumed', updatedAt: now });
  }
  return taken;
}

async function hasQueuedMessages(db: Db, sessionId: string): Promise<boolean> {
  return (await db.sessionMessage.count({ where: { sessionId, queueStatus: 'queued' } })) > 0;
}

/**
 * Compare-and-set of the status: moves to `to` only from one of `from`; false when the session
 * was in another state (or is deleted). Going idle stamps completedAt.
 */
export async function setSessionStatus(db: Db, sessionId: string, from: SessionStatus | SessionStatus[], to: SessionStatus, now: Date): Promise<boolean> {
  const result = await db.session.updateMany({
    where: { id: sessionId, deletedAt: null, status: { in: Array.isArray(from) ? from : [from] } },
    data: { status: to, updatedAt: now, ...(to === 'idle' ? { completedAt: now } : {}) },
  });
  if (result.count === 1) await sessionEvents.status(db, sessionId, to);
  return result.count === 1;
}

/**
 * Adds to a session's counters in one statement (the inclusive usage of its ancestors too: subagent
 * usage rolls up to the top-level session), with a `session.usage` event per model call, the
 * `events` after them and the `analytics`; answers the session's status after the update.
 */
export async function chargeSession(
  db: Db,
  sessionId: string,
  charges: SessionCharges,
  also: { events?: NewEvent[]; analytics?: readonly AnalyticsEvent[] } = {},
): Promise<SessionStatus> {
  const stored = await storeSessionChange(db, sessionId, { charges, ...also });
  if (!stored) throw new SessionStateChanged(sessionId);
  return stored.status;
}

/**
 * Ends a running turn: compare-and-set from `running` (and, for the reaper, from the heartbeat it
 * saw), an `isError` assistant note when given, then idle, or pending when messages wait for the
 * next turn; heartbeat and interrupt cleared; the end published (a note without an outcome is a
 * failure). False when the session was not in that state.
 */
export async function endTurn(
  tx: Db,
  sessionId: string,
  now: Date,
  opts: { note?: string; heartbeat?: Date | null; outcome?: TurnOutcome } = {},
): Promise<boolean> {
  const queued = await hasQueuedMessages(tx, sessionId);
  const { count } = await tx.session.updateMany({
    where: { id: sessionId, status: 'running', ...(opts.heartbeat !== undefined ? { turnHeartbeatAt: opts.heartbeat } : {}) },
    data: {
      status: queued ? 'pending' : 'idle',
      turnHeartbeatAt: null,
      interruptRequestedAt: null,
      updatedAt: now,
      ...(queued ? {} : { completedAt: now }),
    },
  });
  if (count === 0) return false;
  if (opts.note) await appendMessage(tx, sessionId, { role: 'assistant', content: [{ type: 'text', text: opts.note }], isError: true }, now);
  await sessionEvents.turnEnded(tx, sessionId, queued ? 'pending' : 'idle', opts.outcome ?? (opts.note ? 'failed' : 'completed'), opts.note);
  return true;
}
