import type { Db, Prisma } from '../../db/client.ts';
import type { SessionMessage, SessionStatus } from '../../generated/prisma/client.ts';
import { newId } from '../../lib/ids.ts';
import type { ContentBlock, MessageView, TokenUsage } from './schemas.ts';
import { MESSAGE_EXTRA_FIELDS } from './schemas.ts';
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

/** Appends a message and counts it on the session; returns the stored row. */
export async function appendMessage(db: Db, sessionId: string, message: NewMessage, now: Date): Promise<SessionMessage> {
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
  await db.session.update({ where: { id: sessionId }, data: { messageCount: { increment: 1 }, updatedAt: now } });
  await sessionEvents.messageCreated(db, row);
  return row;
}

/**
 * Marks the queued user messages consumed and returns them, oldest first: a turn takes every
 * message that arrived before it started; later ones wait for the next turn. A message queued
 * while the previous turn ran is moved to the end of the history (a new `seq`), so the history
 * reads in the order the agent saw it and a tool call is never separated from its result.
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
  await sessionEvents.messageUpdated(db, taken);
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
 * Adds one turn's usage to the session and to the inclusive usage of the session and of every
 * ancestor (subagent usage rolls up to the top-level session): one update per session.
 */
export async function addUsage(db: Db, sessionId: string, usage: Partial<TokenUsage>): Promise<void> {
  const n = (v: number | undefined) => BigInt(Math.round(v ?? 0));
  const inclusive = {
    inclInputTokens: { increment: n(usage.inputTokens) },
    inclOutputTokens: { increment: n(usage.outputTokens) },
    inclCacheCreation: { increment: n(usage.cacheCreationTokens) },
    inclCacheRead: { increment: n(usage.cacheReadTokens) },
    inclThinkingTokens: { increment: n(usage.thinkingTokens) },
    inclServiceCredits: { increment: usage.serviceCredits ?? 0 },
  };
  const own: { parentSessionId: string | null } = await db.session.update({
    where: { id: sessionId },
    data: {
      inputTokens: { increment: n(usage.inputTokens) },
      outputTokens: { increment: n(usage.outputTokens) },
      cacheCreationTokens: { increment: n(usage.cacheCreationTokens) },
      cacheReadTokens: { increment: n(usage.cacheReadTokens) },
      thinkingTokens: { increment: n(usage.thinkingTokens) },
      serviceCredits: { increment: usage.serviceCredits ?? 0 },
      ...inclusive,
    },
    select: { parentSessionId: true },
  });
  await sessionEvents.usage(db, sessionId, usage);
  const seen = new Set<string>([sessionId]);
  let id = own.parentSessionId;
  while (id && !seen.has(id)) {
    seen.add(id);
    const row: { parentSessionId: string | null } = await db.session.update({ where: { id }, data: inclusive, select: { parentSessionId: true } });
    id = row.parentSessionId;
  }
}

/** Adds a turn's wall time to the session's `assistantActiveTimeMs` (the session's own, not its ancestors'). */
export async function addActiveTime(db: Db, sessionId: string, ms: number): Promise<void> {
  await db.session.update({ where: { id: sessionId }, data: { assistantActiveMs: { increment: BigInt(Math.round(ms)) } } });
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
