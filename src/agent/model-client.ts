import { egressRefusalIn } from '../egress/guard.ts';
import type { ContentBlock, RuntimeMessage } from './content.ts';

/** One entry of the models file, with the API key already read from its `apiKeyEnv`. */
export interface ModelConfig {
  id: string;
  provider: 'openai-compatible' | 'anthropic';
  baseUrl: string;
  apiKey: string;
  /** The provider's model name when it differs from `id`. */
  upstreamModel?: string;
  /** Cap on tokens per model call; Anthropic requires one. Default per provider (context-limits.ts). */
  maxOutputTokens?: number;
  /** The fetch the SDK calls with; set to the egress guard's for URLs a tenant chose. */
  fetch?: typeof globalThis.fetch;
  /** Tokens the model reads and writes per call, input and output together. Default per provider. */
  contextWindow?: number;
}

/** A tool as the model sees it: the JSON schema comes from the tool's zod schema. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/**
 * Token counts of one model call. `inputTokens` excludes cache reads and writes on every provider
 * (Anthropic counts them apart; OpenAI-compatible `prompt_tokens` includes cached tokens, which
 * are subtracted), so the billable-tokens formula applies unchanged.
 */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Reasoning tokens where the provider reports them apart (OpenAI); already inside `outputTokens`. */
  thinkingTokens: number;
}

export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'refusal' | 'interrupted' | 'other';

export interface Completion {
  content: ContentBlock[];
  usage: Usage;
  stopReason: StopReason;
  /** The signal aborted the call: `content` is what had streamed so far (no half-built tool calls). */
  interrupted: boolean;
}

export type ModelDelta = { type: 'text'; text: string } | { type: 'thinking'; thinking: string };

export interface CompleteRequest {
  system: string;
  messages: RuntimeMessage[];
  tools: ToolSpec[];
  /** This call's output cap when it differs from the model's (a compaction summary is shorter). */
  maxOutputTokens?: number;
  signal?: AbortSignal;
  onDelta?: (delta: ModelDelta) => void;
}

export interface ModelClient {
  readonly model: ModelConfig;
  /** Streams under the hood. Throws `ModelCallFailed` on provider errors; an abort is not an error. */
  complete(req: CompleteRequest): Promise<Completion>;
}

export class ModelCallFailed extends Error {
  readonly modelId: string;
  readonly status: number | undefined;
  constructor(modelId: string, status: number | undefined, message: string, cause?: unknown) {
    // SDKs report a refused connection as a bare "Connection error."; the refusal says what to change.
    super(`model ${modelId} failed${status === undefined ? '' : ` (HTTP ${status})`}: ${egressRefusalIn(cause)?.message ?? message}`, { cause });
    this.name = 'ModelCallFailed';
    this.modelId = modelId;
    this.status = status;
  }
}

export function zeroUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, thinkingTokens: 0 };
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    thinkingTokens: a.thinkingTokens + b.thinkingTokens,
  };
}
