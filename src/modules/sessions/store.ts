import type { Db, Prisma } from '../../db/client.ts';
import type { SessionMessage, SessionStatus } from '../../generated/prisma/client.ts';
import { newId } from '../../lib/ids.ts';
import type { ContentBlock, MessageView, TokenUsage } from './schemas.ts';
import { MESSAGE_EXTRA_FIELDS } from './schemas.ts';
import type { AnalyticsEvent } from '../analytics/events.ts';
import { publish, type NewEvent } from '../events/publish.ts';
import { sessionEvent, sessionEvents, type TurnOutcome } from './session-events.ts';

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
 * it (see chargeSession); returns the stored row. One update of the session and one insert of its
 * events and analytics, whatever it carries.
 */
export async function appendMessage(
  db: Db,
  sessionId: string,
  message: NewMessage,
  now: Date,
  usage: Partial<TokenUsage>[] = [],
  /** More for the same update of the session, events to publish after the message's, and analytics events to store with them. */
  also: { session?: Prisma.SessionUpdateInput; events?: NewEvent[]; analytics?: readonly AnalyticsEvent[] } = {},
): Promise<SessionMessage & { sessionStatus: SessionStatus }> {
  const row = await db.sessionMessage.create({
    data: {
      id: newId('msg'),
      sessionId,
      role: message.role,
      content: message.content as Prisma.InputJsonValue,
      queueStatus: message.queueStatus ?? null,
      computerId: message.computerId ?? null,
      parentId: message.parentId ?? null,
      userMessageSource: message.userMessageSource ?? null,
      isError: message.isError ?? null,
      modelId: message.modelId ?? null,
      reasoningEffort: message.reasoningEffort ?? null,
      extra: message.extra ? (message.extra as Prisma.InputJsonValue) : undefined,
      createdAt: now,
      updatedAt: now,
    },
  });
  const charged = await chargeSession(db, sessionId, { messages: 1, usage, now, also: also.session });
  await publish(db, [...charged.events, sessionEvent.messageCreated(row), ...(also.events ?? [])], { analytics: also.analytics });
  return { ...row, sessionStatus: charged.status };
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

/** Each usage field's columns on the session: its own usage, and the inclusive (with its subagents'). */
const USAGE_COLUMNS = [
  ['inputTokens', 'inputTokens', 'inclInputTokens'],
  ['outputTokens', 'outputTokens', 'inclOutputTokens'],
  ['cacheCreationTokens', 'cacheCreationTokens', 'inclCacheCreation'],
  ['cacheReadTokens', 'cacheReadTokens', 'inclCacheRead'],
  ['thinkingTokens', 'thinkingTokens', 'inclThinkingTokens'],
  ['serviceCredits', 'serviceCredits', 'inclServiceCredits'],
] as const satisfies readonly (readonly [keyof TokenUsage, keyof Prisma.SessionUpdateInput, keyof Prisma.SessionUpdateInput])[];

/** What chargeSession adds to a session's counters. */
export interface SessionCharges {
  /** Messages appended. */
  messages?: number;
  /** Model calls' usage, each with its credits: on the session, and inclusive up its parent chain. */
  usage?: Partial<TokenUsage>[];
  /** The turn's wall time, to `assistantActiveTimeMs` (the session's own, not its ancestors'). */
  activeMs?: number;
  /** Stamps `updatedAt` (with messages). */
  now?: Date;
  /** More changes to the session in the same update. */
  also?: Prisma.SessionUpdateInput;
}

/**
 * Adds to a session's counters in one update (plus one per ancestor for usage: subagent usage
 * rolls up to the top-level session) and answers the `session.usage` events of the usage, one per
 * model call, for the caller to publish with the rest of its transaction's events, and the
 * session's status after the update.
 */
export async function chargeSession(db: Db, sessionId: string, charges: SessionCharges): Promise<{ events: NewEvent[]; status: SessionStatus }> {
  const usage = charges.usage ?? [];
  const own: Prisma.SessionUpdateInput = {};
  const inclusive: Prisma.SessionUpdateInput = {};
  for (const [key, ownColumn, inclusiveColumn] of usage.length ? USAGE_COLUMNS : []) {
    const total = usage.reduce((n, u) => n + (u[key] ?? 0), 0);
    const increment = { increment: key === 'serviceCredits' ? total : BigInt(Math.round(total)) };
    Object.assign(own, { [ownColumn]: increment });
    Object.assign(inclusive, { [inclusiveColumn]: increment });
  }
  const updated: { parentSessionId: string | null; status: SessionStatus } = await db.session.update({
    where: { id: sessionId },
    data: {
      ...charges.also,
      ...(charges.messages ? { messageCount: { increment: charges.messages } } : {}),
      ...(charges.now ? { updatedAt: charges.now } : {}),
      ...(charges.activeMs !== undefined ? { assistantActiveMs: { increment: BigInt(Math.round(charges.activeMs)) } } : {}),
      ...own,
      ...inclusive,
    },
    select: { parentSessionId: true, status: true },
  });
  const seen = new Set<string>([sessionId]);
  let id = usage.length ? updated.parentSessionId : null;
  while (id && !seen.has(id)) {
    seen.add(id);
    const row: { parentSessionId: string | null } = await db.session.update({ where: { id }, data: inclusive, select: { parentSessionId: true } });
    id = row.parentSessionId;
  }
  return { events: usage.map((u) => sessionEvent.usage(sessionId, u)), status: updated.status };
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
