import type { Db, Prisma } from '../../db/client.ts';
import type { Session, SessionMessage, SessionStatus } from '../../generated/prisma/client.ts';
import { newId } from '../../lib/ids.ts';
import type { ContentBlock, MessageView, TokenUsage } from './schemas.ts';
import { MESSAGE_EXTRA_FIELDS } from './schemas.ts';
import type { StoredSettings } from './settings.ts';
import { storedSettings } from './views.ts';

/**
 * What the agent runtime reads and writes of a session. Every function takes a Prisma client or a
 * transaction, so the runtime can group writes (a message and its usage) atomically.
 */

export interface LoadedSession {
  session: Session;
  settings: StoredSettings;
}

/** A live (not deleted) session with its settings, or undefined. */
export async function loadSession(db: Db, sessionId: string): Promise<LoadedSession | undefined> {
  const session = await db.session.findFirst({ where: { id: sessionId, deletedAt: null } });
  return session ? { session, settings: storedSettings(session) } : undefined;
}

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
  return row;
}

/**
 * Marks the queued user messages consumed and returns them, oldest first: a turn takes every
 * message that arrived before it started; later ones wait for the next turn.
 */
export async function takeQueuedMessages(db: Db, sessionId: string, now: Date): Promise<SessionMessage[]> {
  const queued = await db.sessionMessage.findMany({ where: { sessionId, queueStatus: 'queued' }, orderBy: { seq: 'asc' } });
  if (queued.length === 0) return [];
  await db.sessionMessage.updateMany({
    where: { id: { in: queued.map((m) => m.id) }, queueStatus: 'queued' },
    data: { queueStatus: 'consumed', updatedAt: now },
  });
  return queued;
}

export async function hasQueuedMessages(db: Db, sessionId: string): Promise<boolean> {
  return (await db.sessionMessage.count({ where: { sessionId, queueStatus: 'queued' } })) > 0;
}

/**
 * Compare-and-set of the status: moves to `to` only from one of `from`; false when the session
 * was in another state (or is deleted). Going idle stamps completedAt.
 */
export async function setSessionStatus(
  db: Db,
  sessionId: string,
  from: SessionStatus | SessionStatus[],
  to: SessionStatus,
  now: Date,
): Promise<boolean> {
  const result = await db.session.updateMany({
    where: { id: sessionId, deletedAt: null, status: { in: Array.isArray(from) ? from : [from] } },
    data: { status: to, updatedAt: now, ...(to === 'idle' ? { completedAt: now } : {}) },
  });
  return result.count === 1;
}

/**
 * Adds one turn's usage to the session and to the inclusive usage of the session and of every
 * ancestor (subagent usage rolls up to the top-level session).
 */
export async function addUsage(
  db: Db,
  sessionId: string,
  usage: Partial<TokenUsage> & { assistantActiveTimeMs?: number },
): Promise<void> {
  const n = (v: number | undefined) => BigInt(Math.round(v ?? 0));
  await db.session.update({
    where: { id: sessionId },
    data: {
      inputTokens: { increment: n(usage.inputTokens) },
      outputTokens: { increment: n(usage.outputTokens) },
      cacheCreationTokens: { increment: n(usage.cacheCreationTokens) },
      cacheReadTokens: { increment: n(usage.cacheReadTokens) },
      thinkingTokens: { increment: n(usage.thinkingTokens) },
      serviceCredits: { increment: usage.serviceCredits ?? 0 },
      assistantActiveMs: { increment: n(usage.assistantActiveTimeMs) },
    },
  });
  const seen = new Set<string>();
  let id: string | null = sessionId;
  while (id && !seen.has(id)) {
    seen.add(id);
    const row: { parentSessionId: string | null } = await db.session.update({
      where: { id },
      data: {
        inclInputTokens: { increment: n(usage.inputTokens) },
        inclOutputTokens: { increment: n(usage.outputTokens) },
        inclCacheCreation: { increment: n(usage.cacheCreationTokens) },
        inclCacheRead: { increment: n(usage.cacheReadTokens) },
        inclThinkingTokens: { increment: n(usage.thinkingTokens) },
        inclServiceCredits: { increment: usage.serviceCredits ?? 0 },
      },
      select: { parentSessionId: true },
    });
    id = row.parentSessionId;
  }
}

/** True while an interrupt asked through the API has not been handled. */
export async function interruptRequested(db: Db, sessionId: string): Promise<boolean> {
  const row = await db.session.findUnique({ where: { id: sessionId }, select: { interruptRequestedAt: true, deletedAt: true } });
  return !row || row.deletedAt !== null || row.interruptRequestedAt !== null;
}

/** Called by the runtime once it has stopped the turn an interrupt asked for. */
export async function clearInterrupt(db: Db, sessionId: string): Promise<void> {
  await db.session.updateMany({ where: { id: sessionId }, data: { interruptRequestedAt: null } });
}
