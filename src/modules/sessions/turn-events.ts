import type { AnalyticsEvent } from '../analytics/events.ts';
import type { AutonomyLevel as AnalyticsAutonomy } from '../analytics/metrics.ts';
import { languageOf } from './checkpoints.ts';
import type { ToolEffects, ToolResultBlock, ToolUseBlock, Usage } from '../../agent/index.ts';
import type { StoredSettings } from './settings.ts';

/** Reasoning efforts that make a call a `thinking`-tier call in analytics. */
const NO_THINKING = new Set(['none', 'off', 'minimal']);

/** The analytics autonomy level a session's tool calls run under. */
function analyticsAutonomy(settings: StoredSettings): AnalyticsAutonomy {
  if (settings.interactionMode === 'spec') return 'spec';
  switch (settings.autonomyLevel) {
    case 'high':
      return 'auto-high';
    case 'medium':
      return 'auto-medium';
    case 'low':
      return 'auto-low';
    default:
      return 'manual';
  }
}

/** A shell command that committed (or opened a pull request), judged by its command line. */
const GIT_COMMIT = /\bgit\b[^;&|]*\bcommit\b/;
const PR_CREATE = /\bgh\s+pr\s+create\b/;

/**
 * The analytics events of one session's turn, built from what the runtime reports. Everything a
 * turn does is attributed to the session's owner.
 */
export function turnEvents(session: { organizationId: string; ownerId: string; id: string }, settings: StoredSettings) {
  const base = (at: Date) => ({ organizationId: session.organizationId, userId: session.ownerId, occurredAt: at, sessionId: session.id });
  return {
    userMessage: (at: Date): AnalyticsEvent => ({ ...base(at), kind: 'message', role: 'user' }),

    userTurn: (at: Date): AnalyticsEvent => ({ ...base(at), kind: 'user_turn' }),

    assistantMessage: (at: Date): AnalyticsEvent => ({ ...base(at), kind: 'message', role: 'assistant' }),

    usage: (at: Date, model: string, usage: Usage, credits: number): AnalyticsEvent => ({
      ...base(at),
      kind: 'token_usage',
      model,
      modelTier: settings.reasoningEffort && !NO_THINKING.has(settings.reasoningEffort) ? 'thinking' : 'standard',
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      cacheReadTokens: usage.cacheReadTokens,
      cacheWriteTokens: usage.cacheWriteTokens,
      serviceCredits: credits,
    }),

    toolCall: (at: Date, call: { toolUse: ToolUseBlock; result: ToolResultBlock; effects?: ToolEffects }): AnalyticsEvent[] => {
      const events: AnalyticsEvent[] = [{ ...base(at), kind: 'tool_call', tool: call.toolUse.name, autonomyLevel: analyticsAutonomy(settings) }];
      for (const file of call.effects?.filesCreated ?? []) events.push({ ...base(at), kind: 'file_created', ...languageOf(file) });
      for (const file of call.effects?.filesEdited ?? []) events.push({ ...base(at), kind: 'file_edited', ...languageOf(file) });
      const command = call.toolUse.input.command;
      if (call.toolUse.name === 'run_command' && !call.result.isError && typeof command === 'string') {
        if (GIT_COMMIT.test(command)) events.push({ ...base(at), kind: 'git_commit' });
        if (PR_CREATE.test(command)) events.push({ ...base(at), kind: 'pull_request_created' });
      }
      return events;
    },
  };
}
