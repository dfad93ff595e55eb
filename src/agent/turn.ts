import { needsApprovalMessage, runsWithoutApproval, type AutonomyLevel } from './autonomy.ts';
import type { RuntimeMessage, ToolResultBlock, ToolUseBlock } from './content.ts';
import { contextLimits } from './context-limits.ts';
import { overflowedPromptTokens } from './context-overflow.ts';
import { ContextOverflow, ContextWindow, type Compaction } from './context-window.ts';
import { addUsage, zeroUsage, type ModelClient, type ModelConfig, type ModelDelta, type Usage } from './model-client.ts';
import type { AgentTool, OutputStream, ToolEffects } from './tool-definition.ts';
import { toolBatches } from './tool-batches.ts';
import type { ToolHost } from './tool-host.ts';
import { TokenEstimator } from './token-estimate.ts';
import { toolSpecs } from './tools.ts';
import { recordTokens, turnStarted } from '../observability/metrics.ts';
import { observeModelCall, observeToolCall } from '../observability/observe.ts';

const DEFAULT_MAX_STEPS = 50;

export interface TurnOptions {
  model: ModelClient;
  tools: readonly AgentTool[];
  /** Where the tools act. */
  host: ToolHost;
  autonomyLevel: AutonomyLevel;
  /** The conversation so far, ending with the user's new message(s). */
  history: readonly RuntimeMessage[];
  system: string;
  /** Aborting interrupts: the model call and the running tool stop, what exists is emitted. */
  signal: AbortSignal;
  /** Model calls per turn before the turn stops with `max_steps`. Default 50. */
  maxSteps?: number;
  /**
   * The model that compacts the context when it nears the window; default `model`. `off`: the
   * context is only trimmed at the window's edge.
   */
  compaction?: ModelClient | 'off';
  /**
   * Each assistant message and each tool message, in order, as it completes; awaited, so the
   * caller can persist it. The caller may set the message's `covers` once it is stored.
   */
  onMessage(message: RuntimeMessage): Promise<void>;
  /** A compaction replaced the start of the context; awaited, so the caller can persist the summary (and set its `covers`). */
  onCompaction?(compaction: Compaction): Promise<void>;
  /** A compaction failed and the turn fell back to trimming. */
  onCompactionFailed?(error: string): void;
  /** Usage of each model call, interrupted and compaction calls included, with the model that made it. */
  onUsage?(usage: Usage, model: ModelConfig): Promise<void> | void;
  onDelta?(delta: ModelDelta): void;
  /** A running tool call's output as it arrives (run_command's stdout and stderr), before its result; not awaited. */
  onToolOutput?(toolUseId: string, stream: OutputStream, text: string): void;
  /** Each tool call after it ran (or was refused), for analytics. */
  onToolCall?(call: { toolUse: ToolUseBlock; result: ToolResultBlock; effects?: ToolEffects; durationMs: number }): Promise<void> | void;
  /**
   * Decides the calls the autonomy level does not allow (all of one assistant message at once):
   * run, refuse with a result for the model, or ask, which pauses the turn (`awaiting_approval`)
   * before any call of that message runs. Without it such calls are refused (needsApprovalMessage).
   */
  gate?(calls: readonly GatedCall[]): Promise<ReadonlyMap<string, GateDecision>>;
}

/** A tool call that needs more autonomy than the turn has. */
export interface GatedCall {
  toolUse: ToolUseBlock;
  tool: AgentTool;
}

export type GateDecision = { run: true } | { refuse: string } | { ask: true };

type TurnStopReason = 'end_turn' | 'interrupted' | 'max_steps' | 'error' | 'awaiting_approval';

export interface TurnResult {
  stopReason: TurnStopReason;
  /** Set with `error`: what failed, to show the user. */
  error?: string;
  /** Sum over the turn's model calls. */
  usage: Usage;
  /** Model calls made. */
  steps: number;
  /** With `awaiting_approval`: the calls to ask about; the history ends with their assistant message. */
  approvals?: GatedCall[];
}

const INTERRUPTED_TOOL = 'Interrupted before this tool call ran.';

/**
 * One turn of the agent: model, then the tools it called, then the model again with their
 * results, until it answers without tool calls. Model and tool failures end the turn as results,
 * never as exceptions; an exception from `onMessage` / `onUsage` (the caller's storage) propagates.
 */
export async function runTurn(opts: TurnOptions): Promise<TurnResult> {
  const ended = turnStarted(opts.model.model.id);
  let stopReason = 'error';
  try {
    const result = await runTurnSteps(opts);
    stopReason = result.stopReason;
    return result;
  } finally {
    ended(stopReason);
  }
}

async function runTurnSteps(opts: TurnOptions): Promise<TurnResult> {
  const maxSteps = opts.maxSteps ?? DEFAULT_MAX_STEPS;
  const specs = toolSpecs(opts.tools);
  const byName = new Map(opts.tools.map((t) => [t.name, t]));
  let messages: RuntimeMessage[] = [...opts.history];
  let usage = zeroUsage();
  let steps = 0;
  const done = (stopReason: TurnStopReason, error?: string): TurnResult => ({ stopReason, usage, steps, ...(error === undefined ? {} : { error }) });
  const emit = async (message: RuntimeMessage) => {
    messages.push(message);
    await opts.onMessage(message);
  };
  const countUsage = async (u: Usage, model: ModelConfig) => {
    usage = addUsage(usage, u);
    recordTokens(model.id, u);
    await opts.onUsage?.(u, model);
  };
  const estimator = new TokenEstimator(opts.model.model);
  const context = new ContextWindow({
    limits: contextLimits(opts.model.model),
    estimator,
    system: opts.system,
    tools: specs,
    compactor: opts.compaction === 'off' ? undefined : (opts.compaction ?? opts.model),
    signal: opts.signal,
    onUsage: countUsage,
    onCompaction: async (c) => {
      await opts.onCompaction?.(c);
    },
    onCompactionFailed: opts.onCompactionFailed,
  });

  // A turn resumed after approvals starts with the tool calls its last assistant message made.
  let calls = trailingToolCalls(messages);
  for (;;) {
    if (!calls) {
      if (steps >= maxSteps) return done('max_steps');
      if (opts.signal.aborted) return done('interrupted');
      steps++;
      let completion;
      // A provider's refusal of the prompt as too large means the estimate fell short of its count
      // (text unlike what it learned from): learn the count, fit again, and call once more.
      for (let attempt = 0; completion === undefined; attempt++) {
        let fitted;
        try {
          fitted = await context.fit(messages);
        } catch (err) {
          // Anything else escaping fit is the caller's storage failing: it propagates, as from onMessage.
          if (err instanceof ContextOverflow) return done('error', err.message);
          throw err;
        }
        messages = fitted.messages;
        try {
          completion = await observeModelCall(
            opts.model.model.id,
            () => opts.signal.aborted,
            () => opts.model.complete({ system: opts.system, messages, tools: specs, signal: opts.signal, onDelta: opts.onDelta }),
          );
        } catch (err) {
          if (opts.signal.aborted) return done('interrupted');
          const reported = attempt === 0 ? overflowedPromptTokens(err, estimator.tokens(fitted.size)) : undefined;
          if (reported === undefined) return done('error', err instanceof Error ? err.message : String(err));
          estimator.observe(fitted.size, { ...zeroUsage(), inputTokens: reported });
          continue;
        }
        estimator.observe(fitted.size, completion.usage);
      }
      await countUsage(completion.usage, opts.model.model);
      if (completion.content.length > 0) await emit({ role: 'assistant', content: completion.content });
      if (completion.interrupted) return done('interrupted');
      calls = completion.content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
      if (calls.length === 0) return done('end_turn');
    }

    const decisions = await gateCalls(opts, byName, calls);
    const asked = [...decisions.entries()].filter(([, d]) => 'ask' in d).map(([id]) => id);
    if (asked.length > 0) {
      const approvals = calls.filter((c) => asked.includes(c.id)).map((toolUse) => ({ toolUse, tool: byName.get(toolUse.name)! }));
      return { ...done('awaiting_approval'), approvals };
    }

    // Every tool_use gets its tool_result, even when interrupted: providers reject a history where one is missing.
    const results: ToolResultBlock[] = [];
    for (const batch of toolBatches(calls, (call) => byName.get(call.name)?.concurrent === true)) {
      const ran = await Promise.all(
        batch.map(async (call) => {
          const started = Date.now();
          const out = await observeToolCall(call.name, byName.has(call.name), () => runToolCall(opts, byName, call, decisions.get(call.id)));
          return { call, ...out, durationMs: Date.now() - started };
        }),
      );
      for (const { call, block, effects, durationMs } of ran) {
        results.push(block);
        await opts.onToolCall?.({ toolUse: call, result: block, effects, durationMs });
      }
    }
    await emit({ role: 'tool', content: results });
    if (opts.signal.aborted) return done('interrupted');
    calls = undefined;
  }
}

/** The tool calls of the history's last message when it is an assistant message that made some. */
function trailingToolCalls(messages: readonly RuntimeMessage[]): ToolUseBlock[] | undefined {
  const last = messages.at(-1);
  if (last?.role !== 'assistant') return undefined;
  const calls = last.content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
  return calls.length > 0 ? calls : undefined;
}

/** Decisions for the calls the autonomy level does not allow; calls it allows are absent. */
async function gateCalls(opts: TurnOptions, byName: Map<string, AgentTool>, calls: readonly ToolUseBlock[]): Promise<ReadonlyMap<string, GateDecision>> {
  const gated = calls.flatMap((toolUse) => {
    const tool = byName.get(toolUse.name);
    return tool && !runsWithoutApproval(opts.autonomyLevel, tool.kind) ? [{ toolUse, tool }] : [];
  });
  if (gated.length === 0) return new Map();
  if (opts.gate) return opts.gate(gated);
  return new Map(gated.map((c) => [c.toolUse.id, { refuse: needsApprovalMessage(opts.autonomyLevel, c.tool.name) }]));
}

async function runToolCall(
  opts: TurnOptions,
  byName: Map<string, AgentTool>,
  call: ToolUseBlock,
  decision: GateDecision | undefined,
): Promise<{ block: ToolResultBlock; effects?: ToolEffects }> {
  const result = (output: string, isError: boolean, effects?: ToolEffects) => ({
    block: { type: 'tool_result' as const, toolUseId: call.id, content: output, isError },
    ...(effects ? { effects } : {}),
  });
  if (opts.signal.aborted) return result(INTERRUPTED_TOOL, true);
  const tool = byName.get(call.name);
  if (!tool) return result(`Unknown tool "${call.name}". Available tools: ${[...byName.keys()].join(', ')}.`, true);
  if (decision && 'refuse' in decision) return result(decision.refuse, true);
  const onOutput = opts.onToolOutput && ((stream: OutputStream, text: string) => opts.onToolOutput!(call.id, stream, text));
  const out = await tool.run(opts.host, call.input, opts.signal, onOutput);
  return result(out.output, out.isError, out.effects);
}
