import type { ModelConfig } from './model-client.ts';

export interface ContextLimits {
  /** Input and output tokens of one call together, as the provider enforces them. */
  contextWindow: number;
  /** The output reserve: what each call asks for at most, so the input may use the rest. */
  maxOutputTokens: number;
}

/**
 * Defaults when the models file does not say. Anthropic's current models read 200k tokens;
 * OpenAI-compatible servers vary (vLLM serves what it was started with), 128k is what OpenAI's
 * and most hosted models take. Both reserve 8192 output tokens, the runtime's cap before windows existed.
 */
const PROVIDER_LIMITS: Record<ModelConfig['provider'], ContextLimits> = {
  anthropic: { contextWindow: 200_000, maxOutputTokens: 8192 },
  'openai-compatible': { contextWindow: 128_000, maxOutputTokens: 8192 },
};

/** The model's window and output reserve; a reserve of half the window or more is cut to a quarter, so input keeps room. */
export function contextLimits(model: Pick<ModelConfig, 'provider' | 'contextWindow' | 'maxOutputTokens'>): ContextLimits {
  const defaults = PROVIDER_LIMITS[model.provider];
  const contextWindow = model.contextWindow ?? defaults.contextWindow;
  const maxOutputTokens = model.maxOutputTokens ?? Math.min(defaults.maxOutputTokens, Math.floor(contextWindow / 4));
  return { contextWindow, maxOutputTokens: maxOutputTokens * 2 > contextWindow ? Math.floor(contextWindow / 4) : maxOutputTokens };
}

/** Input tokens a call may send: the window minus the output reserve. */
export function inputBudget(limits: ContextLimits): number {
  return limits.contextWindow - limits.maxOutputTokens;
}
