import type { PrismaClient } from '../../db/client.ts';
import type { Session } from '../../generated/prisma/client.ts';
import type { Clock } from '../../lib/clock.ts';
import type { AnalyticsEvent } from '../analytics/events.ts';
import { storeCompaction } from './context-history.ts';
import {
  creditsFor,
  runTurn,
  type AgentTool,
  type AutonomyLevel,
  type ModelClient,
  type ModelConfig,
  type ModelPricing,
  type RuntimeMessage,
  type ToolHost,
  type TurnOptions,
  type TurnResult,
  type Usage,
} from '../../agent/index.ts';
import { effectiveAutonomy } from './autonomy-policy.ts';
import type { StoredSettings } from './settings.ts';
import { sessionDeltas, sessionToolOutput } from './session-events.ts';
import type { TokenUsage } from './schemas.ts';
import { appendMessage, chargeSession } from './store.ts';
import { turnEvents } from './turn-events.ts';

/** What every turn of one job shares: the model, the computer and the storage. */
export interface TurnEnvironment {
  db: PrismaClient;
  clock: Clock;
  /** The session's computer in its cwd (a subagent's is its parent's). */
  host: ToolHost;
  model: ModelClient;
  pricing?: ModelPricing;
  /** The model that compacts the context (default: `model`), or `off` (sessionSettings.compactionThresholdCheckEnabled false). */
  compaction?: { model: ModelClient; pricing?: ModelPricing } | 'off';
  system: string;
  /** The organization's maxAutonomyLevel (enterprise controls), above which no call runs unasked. */
  maxAutonomy?: AutonomyLevel;
}

/**
 * Runs one turn of `session` and stores it as it goes: each assistant and tool message when it
 * completes, each model call's usage (on the session and up its parent chain) with its credits,
 * and the analytics events of every message, call and tool call, each in one transaction with
 * what it describes. A model call's usage is stored in the transaction of the message it produced
 * (or, when it produced none, with the turn's active time at its end): one transaction per step,
 * not two. A crash loses at most the message being produced, and its call's usage with it.
 */
export async function runPersistedTurn(
  env: TurnEnvironment,
  session: Pick<Session, 'id' | 'organizationId' | 'ownerId'>,
  settings: StoredSettings,
  /** `gate`: how calls the autonomy level does not allow are decided (a top-level session asks its owner; a subagent refuses them). */
  opts: { history: RuntimeMessage[]; tools: readonly AgentTool[]; signal: AbortSignal; gate?: TurnOptions['gate'] },
): Promise<TurnResult & { emitted: RuntimeMessage[] }> {
  const events = turnEvents(session, settings);
  const emitted: RuntimeMessage[] = [];
  // A batch's tool-call events are stored with the tool message that carries its results.
  let toolCallEvents: AnalyticsEvent[] = [];
  // Model calls' usage not stored yet: it goes with the next message (or the turn's end).
  let pendingUsage: { usage: Usage; model: ModelConfig; at: Date }[] = [];
  const { db, clock } = env;
  /** The pending usage as the session stores it (with its credits), and its analytics events. */
  const pending = () => {
    const usage: Partial<TokenUsage>[] = [];
    const analytics: AnalyticsEvent[] = [];
    for (const { usage: u, model, at } of pendingUsage) {
      // A compaction by another model is priced (and reported in analytics) as that model.
      const pricing = model.id === env.model.model.id || env.compaction === 'off' ? env.pricing : env.compaction?.pricing;
      const credits = creditsFor(u, pricing);
      usage.push({
        inputTokens: u.inputTokens,
        outputTokens: u.outputTokens,
        cacheCreationTokens: u.cacheWriteTokens,
        cacheReadTokens: u.cacheReadTokens,
        thinkingTokens: u.thinkingTokens,
        serviceCredits: credits,
      });
      analytics.push(events.usage(at, model.id, u, credits));
    }
    return { usage, analytics };
  };
  const started = Date.now();
  const deltas = sessionDeltas(db, session);
  const toolOutput = sessionToolOutput(db, session);
  const result = await runTurn({
    model: env.model,
    tools: opts.tools,
    host: env.host,
    autonomyLevel: effectiveAutonomy(settings, env.maxAutonomy),
    history: opts.history,
    system: env.system,
    signal: opts.signal,
    gate: opts.gate,
    compaction: env.compaction === 'off' ? 'off' : env.compaction?.model,
    onDelta: (delta) => deltas.push(delta),
    onToolOutput: (toolUseId, stream, text) => toolOutput.push(toolUseId, stream, text),
    onMessage: async (message) => {
      await deltas.flush();
      await toolOutput.flush();
      emitted.push(message);
      const now = clock.now();
      const { usage, analytics } = pending();
      const row = await appendMessage(
        db,
        session.id,
        {
          role: message.role,
          content: message.content,
          ...(message.role === 'assistant' ? { modelId: env.model.model.id, reasoningEffort: settings.reasoningEffort } : {}),
        },
        now,
        usage,
        { analytics: [...analytics, ...(message.role === 'assistant' ? [events.assistantMessage(now)] : toolCallEvents)] },
      );
      message.covers = { fromSeq: Number(row.seq), toSeq: Number(row.seq) };
      pendingUsage = [];
      if (message.role === 'tool') toolCallEvents = [];
    },
    onCompaction: async (compaction) => {
      await storeCompaction(db, session.id, compaction, clock.now());
    },
    onUsage: (usage, model) => {
      pendingUsage.push({ usage, model, at: clock.now() });
    },
    onToolCall: (call) => {
      toolCallEvents.push(...events.toolCall(clock.now(), call));
    },
  });
  const activeMs = Date.now() - started;
  const { usage, analytics } = pending();
  await chargeSession(db, session.id, { usage, activeMs }, { analytics });
  return { ...result, emitted };
}

/** The text an assistant message ends with, e.g. a subagent's answer. */
export function finalText(messages: readonly RuntimeMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'assistant') continue;
    const text = m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
    if (text) return text;
  }
  return '';
}
