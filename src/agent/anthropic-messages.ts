import Anthropic, { APIError } from '@anthropic-ai/sdk';
import type { ContentBlockParam, MessageParam, RawMessageStreamEvent, TextBlockParam, Tool } from '@anthropic-ai/sdk/resources/messages';
import { toolResultText, type ContentBlock, type RuntimeMessage } from './content.ts';
import { contextLimits } from './context-limits.ts';
import { sortedKeys } from './stable-json.ts';
import {
  ModelCallFailed,
  zeroUsage,
  type Completion,
  type CompleteRequest,
  type ModelClient,
  type ModelConfig,
  type StopReason,
  type ToolSpec,
  type Usage,
} from './model-client.ts';

const EPHEMERAL = { type: 'ephemeral' } as const;

/**
 * Anthropic Messages API through the official `@anthropic-ai/sdk`; thinking keeps its signature.
 * Requests mark prompt-cache breakpoints: the system prompt (which caches the tools before it)
 * and the last two user turns. The last one writes the prefix this call adds; the one before it
 * is where the previous call's prefix ended, so that prefix is read from cache whatever the
 * number of blocks in between. Three of the four breakpoints the API allows.
 */
export function createAnthropicClient(model: ModelConfig): ModelClient {
  const client = new Anthropic({ baseURL: model.baseUrl, apiKey: model.apiKey, maxRetries: 2, fetch: model.fetch });
  return {
    model,
    async complete(req: CompleteRequest): Promise<Completion> {
      const state = new StreamState();
      const tools = req.tools.map(toAnthropicTool);
      const system: TextBlockParam[] = req.system ? [{ type: 'text', text: req.system, cache_control: EPHEMERAL }] : [];
      const lastTool = tools.at(-1);
      if (system.length === 0 && lastTool) lastTool.cache_control = EPHEMERAL;
      try {
        const stream = await client.messages.create(
          {
            model: model.upstreamModel ?? model.id,
            max_tokens: req.maxOutputTokens ?? contextLimits(model).maxOutputTokens,
            ...(system.length > 0 ? { system } : {}),
            messages: markCacheBreakpoints(toAnthropicMessages(req.messages)),
            ...(tools.length > 0 ? { tools } : {}),
            stream: true,
          },
          { signal: req.signal },
        );
        for await (const event of stream) state.push(event, req);
      } catch (err) {
        if (req.signal?.aborted) return state.finish(true);
        throw new ModelCallFailed(model.id, err instanceof APIError ? err.status : undefined, err instanceof Error ? err.message : String(err), err);
      }
      return state.finish(req.signal?.aborted ?? false);
    },
  };
}

type Building =
  | { kind: 'text'; text: string; done: boolean }
  | { kind: 'thinking'; thinking: string; signature: string; done: boolean }
  | { kind: 'redacted_thinking'; data: string; done: boolean }
  | { kind: 'tool_use'; id: string; name: string; json: string; done: boolean };

class StreamState {
  private readonly blocks = new Map<number, Building>();
  private usage: Usage = zeroUsage();
  private stopReason: string | null = null;

  push(event: RawMessageStreamEvent, req: CompleteRequest): void {
    switch (event.type) {
      case 'message_start': {
        const u = event.message.usage;
        this.usage = {
          inputTokens: u.input_tokens,
          outputTokens: u.output_tokens,
          cacheReadTokens: u.cache_read_input_tokens ?? 0,
          cacheWriteTokens: u.cache_creation_input_tokens ?? 0,
          // The Messages API counts thinking inside output_tokens without a separate figure.
          thinkingTokens: 0,
        };
        return;
      }
      case 'content_block_start': {
        const b = event.content_block;
        if (b.type === 'text') this.blocks.set(event.index, { kind: 'text', text: b.text, done: false });
        else if (b.type === 'thinking') this.blocks.set(event.index, { kind: 'thinking', thinking: b.thinking, signature: b.signature, done: false });
        else if (b.type === 'redacted_thinking') this.blocks.set(event.index, { kind: 'redacted_thinking', data: b.data, done: false });
        else if (b.type === 'tool_use') this.blocks.set(event.index, { kind: 'tool_use', id: b.id, name: b.name, json: '', done: false });
        return;
      }
      case 'content_block_delta': {
        const b = this.blocks.get(event.index);
        const d = event.delta;
        if (!b) return;
        if (d.type === 'text_delta' && b.kind === 'text') {
          b.text += d.text;
          req.onDelta?.({ type: 'text', text: d.text });
        } else if (d.type === 'thinking_delta' && b.kind === 'thinking') {
          b.thinking += d.thinking;
          req.onDelta?.({ type: 'thinking', thinking: d.thinking });
        } else if (d.type === 'signature_delta' && b.kind === 'thinking') {
          b.signature += d.signature;
        } else if (d.type === 'input_json_delta' && b.kind === 'tool_use') {
          b.json += d.partial_json;
        }
        return;
      }
      case 'content_block_stop': {
        const b = this.blocks.get(event.index);
        if (b) b.done = true;
        return;
      }
      case 'message_delta': {
        const u = event.usage;
        this.usage = {
          inputTokens: u.input_tokens ?? this.usage.inputTokens,
          outputTokens: u.output_tokens,
          cacheReadTokens: u.cache_read_input_tokens ?? this.usage.cacheReadTokens,
          cacheWriteTokens: u.cache_creation_input_tokens ?? this.usage.cacheWriteTokens,
          thinkingTokens: 0,
        };
        if (event.delta.stop_reason) this.stopReason = event.delta.stop_reason;
        return;
      }
      default:
        return;
    }
  }

  finish(interrupted: boolean): Completion {
    const content: ContentBlock[] = [];
    for (const [, b] of [...this.blocks].sort(([a], [c]) => a - c)) {
      if (b.kind === 'text' && b.text) content.push({ type: 'text', text: b.text });
      // Unfinished tool calls and thinking without its signature cannot be sent back: drop them.
      else if (b.kind === 'thinking' && (b.done || !interrupted))
        content.push({ type: 'thinking', thinking: b.thinking, signature: b.signature, signatureProvider: 'anthropic' });
      else if (b.kind === 'redacted_thinking' && b.done) content.push({ type: 'redacted_thinking', data: b.data });
      else if (b.kind === 'tool_use' && b.done && !interrupted) content.push({ type: 'tool_use', id: b.id, name: b.name, input: parseInput(b.json) });
    }
    return { content, usage: this.usage, stopReason: interrupted ? 'interrupted' : stopReasonOf(this.stopReason), interrupted };
  }
}

function parseInput(json: string): Record<string, unknown> {
  if (json.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(json);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return { invalidJsonArguments: json };
  }
}

function stopReasonOf(reason: string | null): StopReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'end_turn';
    case 'tool_use':
      return 'tool_use';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max_tokens';
    case 'refusal':
      return 'refusal';
    default:
      return 'other';
  }
}

function toAnthropicTool(tool: ToolSpec): Tool {
  return { name: tool.name, description: tool.description, input_schema: tool.inputSchema as Tool['input_schema'] };
}

function toParam(block: ContentBlock): ContentBlockParam | undefined {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
      return { type: 'image', source: { type: 'base64', media_type: block.source.mediaType, data: block.source.data } };
    case 'document':
      return block.source.type === 'text'
        ? { type: 'document', source: { type: 'text', media_type: 'text/plain', data: block.source.data } }
        : { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: block.source.data } };
    case 'thinking':
      // Another provider's (or an unsigned) thinking block would be rejected by signature checks.
      return block.signatureProvider === 'anthropic' && block.signature
        ? { type: 'thinking', thinking: block.thinking, signature: block.signature }
        : undefined;
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: block.data };
    case 'tool_use':
      return { type: 'tool_use', id: block.id, name: block.name, input: sortedKeys(block.input) };
    case 'tool_result':
      return { type: 'tool_result', tool_use_id: block.toolUseId, content: toolResultText(block), ...(block.isError ? { is_error: true } : {}) };
  }
}

/** `tool` messages become user turns of tool_result blocks, as the Messages API expects. */
export function toAnthropicMessages(messages: RuntimeMessage[]): MessageParam[] {
  const out: MessageParam[] = [];
  for (const m of messages) {
    if (m.role === 'system') continue;
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const blocks = m.content.flatMap((b) => {
      const p = toParam(b);
      return p ? [p] : [];
    });
    if (blocks.length === 0) continue;
    const last = out.at(-1);
    // The API wants alternating roles: merge consecutive turns of one role.
    if (last && last.role === role && Array.isArray(last.content)) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  }
  return out;
}

/** Marks the last block of the last two user turns as cache breakpoints (see createAnthropicClient). */
function markCacheBreakpoints(messages: MessageParam[]): MessageParam[] {
  let marked = 0;
  for (let i = messages.length - 1; i >= 0 && marked < 2; i--) {
    const m = messages[i]!;
    if (m.role !== 'user' || !Array.isArray(m.content)) continue;
    const last = m.content.at(-1);
    // Thinking blocks cannot carry a breakpoint; user turns hold none.
    if (last && last.type !== 'thinking' && last.type !== 'redacted_thinking') {
      last.cache_control = EPHEMERAL;
      marked++;
    }
  }
  return messages;
}
