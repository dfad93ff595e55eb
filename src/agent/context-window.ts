import type { RuntimeMessage } from './content.ts';
import { CompactionFailed, isSummary, summarise, summaryMessage } from './compaction.ts';
import { inputBudget, type ContextLimits } from './context-limits.ts';
import { dropOldest, LAST_RESORT_MAX_CHARS, OLD_OUTPUT_MAX_CHARS, trimToolOutputs } from './context-trim.ts';
import type { ModelClient, ModelConfig, ToolSpec, Usage } from './model-client.ts';
import { messageSize, TokenEstimator, type RequestSize } from './token-estimate.ts';

/** Share of the input budget past which older turns are compacted. */
const COMPACT_AT = 0.75;
/** Share of the input budget the recent turns kept after a compaction may take. */
const KEEP_RECENT = 0.3;
/** Share of the input budget a summary may take. */
const SUMMARY_SHARE = 0.15;
const MAX_SUMMARY_TOKENS = 4_096;

export interface Compaction {
  summary: RuntimeMessage;
  /** The messages at the start of the context the summary replaces. */
  replaced: RuntimeMessage[];
  model: ModelConfig;
  tokensBefore: number;
  tokensAfter: number;
}

export interface ContextWindowOptions {
  limits: ContextLimits;
  estimator: TokenEstimator;
  system: string;
  tools: readonly ToolSpec[];
  /** The model that summarises; absent: no compaction, the context is only trimmed at the window. */
  compactor?: ModelClient;
  signal?: AbortSignal;
  onCompaction(compaction: Compaction): Promise<void>;
  /** Usage of a compaction call, failed ones included. */
  onUsage(usage: Usage, model: ModelConfig): Promise<void> | void;
  /** A compaction failed and the context was trimmed instead. */
  onCompactionFailed?(error: string): void;
}

/** Even the newest message alone exceeds the window. */
export class ContextOverflow extends Error {}

/**
 * Keeps one turn's context inside the model's window. Before each call, past COMPACT_AT of the
 * input budget: old large tool outputs are cut; if that is not enough, the older messages are
 * summarised into a compaction message. A compaction that fails (or is off) falls back to
 * dropping the oldest messages, and after one failure the turn does not try again (a provider
 * that is down would otherwise be asked on every call). Nothing over the window is ever sent.
 */
export class ContextWindow {
  private compactionFailed = false;
  private readonly budget: number;
  private readonly opts: ContextWindowOptions;

  constructor(opts: ContextWindowOptions) {
    this.opts = opts;
    this.budget = inputBudget(opts.limits);
  }

  private measure(messages: readonly RuntimeMessage[]): { size: RequestSize; tokens: number } {
    const size = this.opts.estimator.measure({ system: this.opts.system, tools: this.opts.tools, messages });
    return { size, tokens: this.opts.estimator.tokens(size) };
  }

  /** The context to send (it replaces `messages` for later calls) and its measured size. */
  async fit(messages: RuntimeMessage[]): Promise<{ messages: RuntimeMessage[]; size: RequestSize }> {
    const threshold = Math.floor(this.budget * COMPACT_AT);
    let current = this.measure(messages);
    const canCompact = this.opts.compactor !== undefined && !this.compactionFailed;
    if (current.tokens > threshold && canCompact) {
      messages = trimToolOutputs(messages, OLD_OUTPUT_MAX_CHARS, 0, lastCallStart(messages));
      current = this.measure(messages);
      if (current.tokens > threshold) {
        const compacted = await this.compact(messages, current.tokens);
        if (compacted) messages = compacted;
        current = this.measure(messages);
      }
    }
    // The fallback keeps the turn under the threshold, so the calls after it do not sit at the edge.
    const target = this.compactionFailed ? threshold : this.budget;
    if (current.tokens > target) {
      messages = trimToolOutputs(messages, OLD_OUTPUT_MAX_CHARS, 0, lastCallStart(messages));
      current = this.measure(messages);
    }
    while (current.tokens > target) {
      const shorter = dropOldest(messages);
      if (!shorter) break;
      messages = shorter;
      current = this.measure(messages);
    }
    if (current.tokens > this.budget) {
      messages = trimToolOutputs(messages, LAST_RESORT_MAX_CHARS);
      current = this.measure(messages);
    }
    if (current.tokens > this.budget) {
      throw new ContextOverflow(
        `The latest message is about ${current.tokens} tokens, more than the ${this.budget} input tokens the session's model takes; send a shorter message or pick a model with a larger contextWindow`,
      );
    }
    return { messages, size: current.size };
  }

  /** The context with its older part summarised, or undefined when there is nothing to summarise or the summary failed. */
  private async compact(messages: RuntimeMessage[], tokensBefore: number): Promise<RuntimeMessage[] | undefined> {
    const compactor = this.opts.compactor!;
    const keep = recentStart(messages, (m) => this.opts.estimator.tokens(messageSize(m)), this.budget * KEEP_RECENT);
    const replaced = messages.slice(0, keep);
    if (replaced.length === 0 || (replaced.length === 1 && isSummary(replaced[0]))) return undefined;
    try {
      const { text, usage } = await summarise({
        client: compactor,
        estimator: new TokenEstimator(compactor.model),
        system: this.opts.system,
        tools: this.opts.tools,
        messages: replaced,
        maxOutputTokens: Math.min(MAX_SUMMARY_TOKENS, Math.floor(this.budget * SUMMARY_SHARE)),
        signal: this.opts.signal,
      });
      await this.opts.onUsage(usage, compactor.model);
      const from = replaced.find((m) => m.covers)?.covers?.fromSeq;
      const to = replaced.findLast((m) => m.covers)?.covers?.toSeq;
      const summary = summaryMessage(text, from !== undefined && to !== undefined ? { fromSeq: from, toSeq: to } : undefined);
      const next = [summary, ...messages.slice(keep)];
      await this.opts.onCompaction({ summary, replaced, model: compactor.model, tokensBefore, tokensAfter: this.measure(next).tokens });
      return next;
    } catch (err) {
      if (!(err instanceof CompactionFailed)) throw err;
      if (err.usage) await this.opts.onUsage(err.usage, compactor.model);
      this.compactionFailed = true;
      this.opts.onCompactionFailed?.(err.message);
      return undefined;
    }
  }
}

/** Where the last model call's messages begin: its assistant message and tool results stay whole. */
function lastCallStart(messages: readonly RuntimeMessage[]): number {
  let i = messages.length - 1;
  while (i > 0 && messages[i]!.role === 'tool') i--;
  return i;
}

/**
 * The first index of the recent messages a compaction keeps: as many as fit `keepTokens`, at least
 * the last call with its results, and never starting at a tool message (its call would be gone).
 */
function recentStart(messages: readonly RuntimeMessage[], tokensOf: (m: RuntimeMessage) => number, keepTokens: number): number {
  let start = lastCallStart(messages);
  let used = messages.slice(start).reduce((n, m) => n + tokensOf(m), 0);
  for (let i = start - 1; i >= 0; i--) {
    used += tokensOf(messages[i]!);
    if (used > keepTokens) break;
    if (messages[i]!.role !== 'tool') start = i;
  }
  return start;
}
