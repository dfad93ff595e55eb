import { ModelCallFailed } from './model-client.ts';

/** How providers word a prompt's own size when they refuse it as too large for the window. */
const REPORTED_PROMPT = [
  /\((\d+) in the messages/, // OpenAI, vLLM: "you requested M tokens (P in the messages, C in the completion)"
  /prompt is too long: (\d+) tokens/, // Anthropic
  /exceed context limit: (\d+) \+/, // Anthropic, input plus max_tokens
];
const OVERFLOW = /context length|context window|context limit|prompt is too long|too many tokens/i;
/** Without a figure in the refusal, the estimate is taken to be this far too low. */
const UNREPORTED_FACTOR = 1.5;

/**
 * The prompt tokens a provider counted in a refusal for exceeding the context window, or
 * undefined when `err` is no such refusal. The estimate was too low: the count lets it learn
 * the truth before the call is fitted and made again.
 */
export function overflowedPromptTokens(err: unknown, estimated: number): number | undefined {
  if (!(err instanceof ModelCallFailed) || (err.status !== 400 && err.status !== 413) || !OVERFLOW.test(err.message)) return undefined;
  for (const re of REPORTED_PROMPT) {
    const m = re.exec(err.message);
    if (m) return Number(m[1]);
  }
  return Math.ceil(estimated * UNREPORTED_FACTOR);
}
