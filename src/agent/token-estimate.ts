import { toolResultText, type ContentBlock, type RuntimeMessage } from './content.ts';
import type { ModelConfig, ToolSpec, Usage } from './model-client.ts';
import { stableStringify } from './stable-json.ts';

/** A request's size before it is turned into tokens: text characters, plus tokens counted apart (images). */
export interface RequestSize {
  chars: number;
  fixedTokens: number;
}

/**
 * Tokens per character before a model has reported any usage: about 2.9 characters a token,
 * denser than English prose (about 4) and code (about 3.5) on the tokenizers we know, so a cold
 * estimate errs high.
 */
const INITIAL_TOKENS_PER_CHAR = 0.35;
/** Calibrated estimates are raised by this much: the next request's mix of text and code differs from the last one's. */
const SAFETY = 1.1;
/** Role markers and separators each message costs on every provider's template. */
const PER_MESSAGE_TOKENS = 8;
/** Anthropic bills an image by its pixels, up to about 1,600 tokens; base64 length says nothing useful. */
const IMAGE_TOKENS = 1_600;
/** A PDF page is about 1,500-3,000 tokens in some 50-100 KB: one token per 25 bytes errs high. */
const PDF_BYTES_PER_TOKEN = 25;
/** Fewer characters than this say more about the template than the tokenizer: not used to calibrate. */
const MIN_CALIBRATION_CHARS = 2_000;

/**
 * Learned tokens-per-character by model, shared by the turns one worker runs: a calibration from
 * one turn serves the next. Lost on restart, when the cold estimate (which errs high) takes over
 * until the first call reports its usage.
 */
const calibration = new Map<string, number>();

function blockSize(block: ContentBlock, size: RequestSize): void {
  switch (block.type) {
    case 'text':
      size.chars += block.text.length;
      return;
    case 'thinking':
      size.chars += block.thinking.length + block.signature.length;
      return;
    case 'redacted_thinking':
      size.chars += block.data.length;
      return;
    case 'tool_use':
      size.chars += block.name.length + block.id.length + stableStringify(block.input).length;
      return;
    case 'tool_result':
      size.chars += block.toolUseId.length + toolResultText(block).length;
      if (Array.isArray(block.content)) for (const b of block.content) if (b.type !== 'text' && b.type !== 'document') blockSize(b, size);
      return;
    case 'image':
      size.fixedTokens += IMAGE_TOKENS;
      return;
    case 'document':
      if (block.source.type === 'text') size.chars += block.source.data.length;
      else size.fixedTokens += Math.ceil((block.source.data.length * 0.75) / PDF_BYTES_PER_TOKEN);
      return;
  }
}

export function messageSize(message: RuntimeMessage): RequestSize {
  const size = { chars: 0, fixedTokens: PER_MESSAGE_TOKENS };
  for (const block of message.content) blockSize(block, size);
  return size;
}

/**
 * Estimates a request's input tokens for one model. No tokenizer fits every model we call (an
 * OpenAI-compatible server may run any model; Anthropic publishes none for its current models),
 * so the estimate counts characters and learns the model's tokens per character from the input
 * tokens each call reports.
 */
export class TokenEstimator {
  private readonly key: string;

  constructor(model: Pick<ModelConfig, 'provider' | 'baseUrl' | 'upstreamModel' | 'id'>) {
    this.key = `${model.provider} ${model.baseUrl} ${model.upstreamModel ?? model.id}`;
  }

  get tokensPerChar(): number {
    return calibration.get(this.key) ?? INITIAL_TOKENS_PER_CHAR;
  }

  measure(req: { system: string; tools: readonly ToolSpec[]; messages: readonly RuntimeMessage[] }): RequestSize {
    const size = { chars: req.system.length + (req.tools.length > 0 ? stableStringify(req.tools).length : 0), fixedTokens: PER_MESSAGE_TOKENS };
    for (const m of req.messages) {
      const s = messageSize(m);
      size.chars += s.chars;
      size.fixedTokens += s.fixedTokens;
    }
    return size;
  }

  tokens(size: RequestSize): number {
    return Math.ceil(size.chars * this.tokensPerChar + size.fixedTokens);
  }

  /** Learns from a call's reported usage: every input token, cached or not, was in the request. */
  observe(size: RequestSize, usage: Usage): void {
    const reported = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
    if (size.chars < MIN_CALIBRATION_CHARS || reported <= size.fixedTokens) return;
    calibration.set(this.key, ((reported - size.fixedTokens) / size.chars) * SAFETY);
  }
}
