import type { Session, SessionMessage } from '../../generated/prisma/client.ts';
import { MESSAGE_EXTRA_FIELDS, type ContentBlock, type MessageView, type PendingApprovalView, type SessionView, type TokenUsage } from './schemas.ts';
import { toAutonomyMode, type StoredSettings } from './settings.ts';

type UsageColumns = Pick<Session, 'inputTokens' | 'outputTokens' | 'cacheCreationTokens' | 'cacheReadTokens' | 'thinkingTokens' | 'serviceCredits'>;
export type InclusiveColumns = Pick<
  Session,
  'inclInputTokens' | 'inclOutputTokens' | 'inclCacheCreation' | 'inclCacheRead' | 'inclThinkingTokens' | 'inclServiceCredits'
>;

function ownUsage(s: UsageColumns): TokenUsage {
  return {
    inputTokens: Number(s.inputTokens),
    outputTokens: Number(s.outputTokens),
    cacheCreationTokens: Number(s.cacheCreationTokens),
    cacheReadTokens: Number(s.cacheReadTokens),
    thinkingTokens: Number(s.thinkingTokens),
    serviceCredits: s.serviceCredits,
  };
}

function inclusiveUsage(s: InclusiveColumns): TokenUsage {
  return {
    inputTokens: Number(s.inclInputTokens),
    outputTokens: Number(s.inclOutputTokens),
    cacheCreationTokens: Number(s.inclCacheCreation),
    cacheReadTokens: Number(s.inclCacheRead),
    thinkingTokens: Number(s.inclThinkingTokens),
    serviceCredits: s.inclServiceCredits,
  };
}

export function storedSettings(s: Pick<Session, 'settings'>): StoredSettings {
  const v = s.settings;
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as StoredSettings) : {};
}

/** A session row as the wire's Session; `children` are its direct subagent sessions, `pending` the calls its paused turn waits on. */
export function sessionView(s: Session, children: (InclusiveColumns & { id: string })[] = [], pending: PendingApprovalView[] = []): SessionView {
  const settings = storedSettings(s);
  const autonomyMode = toAutonomyMode(settings.interactionMode, settings.autonomyLevel);
  return {
    sessionId: s.id,
    ...(s.title ? { title: s.title } : {}),
    status: s.status,
    messageCount: s.messageCount,
    createdAt: s.createdAt.getTime(),
    updatedAt: s.updatedAt.getTime(),
    ...(s.completedAt ? { completedAt: s.completedAt.getTime() } : {}),
    computerId: s.computerId,
    cwd: s.cwd,
    sessionSettings: {
      ...settings,
      ...(autonomyMode ? { autonomyMode } : {}),
      assistantActiveTimeMs: Number(s.assistantActiveMs),
      tokenUsage: ownUsage(s),
      inclusiveTokenUsage: inclusiveUsage(s),
      childInclusiveTokenUsageBySessionId: Object.fromEntries(children.map((c) => [c.id, inclusiveUsage(c)])),
      ...(s.archivedAt ? { archivedAt: s.archivedAt.toISOString() } : {}),
    },
    serviceCredits: s.inclServiceCredits,
    ...(s.parentSessionId ? { parent_session_id: s.parentSessionId } : {}),
    pendingApprovals: pending,
  };
}

export function messageView(m: SessionMessage): MessageView {
  const extra = (m.extra ?? {}) as Partial<Record<(typeof MESSAGE_EXTRA_FIELDS)[number], unknown>>;
  const picked = Object.fromEntries(MESSAGE_EXTRA_FIELDS.filter((k) => extra[k] !== undefined).map((k) => [k, extra[k]]));
  return {
    id: m.id,
    role: m.role as MessageView['role'],
    content: m.content as ContentBlock[],
    createdAt: m.createdAt.getTime(),
    updatedAt: m.updatedAt.getTime(),
    ...(m.parentId ? { parentId: m.parentId } : {}),
    ...(m.userMessageSource ? { userMessageSource: m.userMessageSource } : {}),
    ...picked,
    ...(m.isError !== null ? { isError: m.isError } : {}),
    ...(m.modelId ? { modelId: m.modelId } : {}),
    ...(m.reasoningEffort ? { reasoningEffort: m.reasoningEffort as MessageView['reasoningEffort'] } : {}),
    seq: Number(m.seq),
  };
}
