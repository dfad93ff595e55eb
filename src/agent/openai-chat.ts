import OpenAI, { APIError } from 'openai';
import type { ChatCompletionContentPart, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { toolResultText, type ContentBlock, type RuntimeMessage, type ToolUseBlock } from './content.ts';
import { stableStringify } from './stable-json.ts';
import { contextLimits } from './context-limits.ts';
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

/**
 * OpenAI-compatible Chat Completions (`/chat/completions`), through the official `openai` client.
 * Providers that cache prompts do so by themselves on a byte-identical prefix: the request is
 * built so that the history it repeats serializes the same way on every call (tool arguments
 * with sorted keys, the system prompt first and unchanged within a turn).
 */
export function createOpenAiChatClient(model: ModelConfig): ModelClient {
  const client = new OpenAI({ baseURL: model.baseUrl, apiKey: model.apiKey, maxRetries: 2, fetch: model.fetch });
  return {
    model,
    async complete(req: CompleteRequest): Promise<Completion> {
      const state = new StreamState();
      try {
        const stream = await client.chat.completions.create(
          {
            model: model.upstreamModel ?? model.id,
            messages: toChatMessages(req.system, req.messages),
            ...(req.tools.length > 0 ? { tools: req.tools.map(toChatTool) } : {}),
            max_completion_tokens: req.maxOutputTokens ?? contextLimits(model).maxOutputTokens,
            stream: true,
            stream_options: { include_usage: true },
          },
          { signal: req.signal },
        );
        for await (const chunk of stream) state.push(chunk, req);
      } catch (err) {
        if (req.signal?.aborted) return state.finish(true);
        throw new ModelCallFailed(model.id, err instanceof APIError ? err.status : undefined, err instanceof Error ? err.message : String(err), err);
      }
      return state.finish(req.signal?.aborted ?? false);
    },
  };
}

interface ReasoningDelta {
  reasoning_content?: string | null;
  reasoning?: string | null;
}

/** Assembles streamed chunks into blocks: thinking first, then text, then tool calls. */
class StreamState {
  private thinking = '';
  private text = '';
  private readonly calls = new Map<number, { id: string; name: string; args: string }>();
  private finishReason: string | null = null;
  private usage: Usage = zeroUsage();

  push(chunk: OpenAI.Chat.Completions.ChatCompletionChunk, req: CompleteRequest): void {
    if (chunk.usage) {
      const cached = chunk.usage.prompt_tokens_details?.cached_tokens ?? 0;
      this.usage = {
        inputTokens: Math.max(0, chunk.usage.prompt_tokens - cached),
        outputTokens: chunk.usage.completion_tokens,
        cacheReadTokens: cached,
        cacheWriteTokens: 0,
        thinkingTokens: chunk.usage.completion_tokens_details?.reasoning_tokens ?? 0,
      };
    }
    const choice = chunk.choices[0];
    if (!choice) return;
    const delta = choice.delta;
    const reasoning = (delta as ReasoningDelta).reasoning_content ?? (delta as ReasoningDelta).reasoning;
    if (reasoning) {
      this.thinking += reasoning;
      req.onDelta?.({ type: 'thinking', thinking: reasoning });
    }
    if (delta.content) {
      this.text += delta.content;
      req.onDelta?.({ type: 'text', text: delta.content });
    }
    for (const tc of delta.tool_calls ?? []) {
      const call = this.calls.get(tc.index) ?? { id: '', name: '', args: '' };
      if (tc.id) call.id = tc.id;
      if (tc.function?.name) call.name += tc.function.name;
      if (tc.function?.arguments) call.args += tc.function.arguments;
      this.calls.set(tc.index, call);
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  finish(interrupted: boolean): Completion {
    const content: ContentBlock[] = [];
    if (this.thinking) content.push({ type: 'thinking', thinking: this.thinking, signature: '', signatureProvider: 'generic-chat-completion-api' });
    if (this.text) content.push({ type: 'text', text: this.text });
    // An interrupted call's tool calls may be cut off mid-arguments: never run half a call.
    if (!interrupted) {
      for (const [index, call] of [...this.calls].sort(([a], [b]) => a - b)) content.push(toToolUse(index, call));
    }
    return { content, usage: this.usage, stopReason: interrupted ? 'interrupted' : stopReasonOf(this.finishReason), interrupted };
  }
}

function toToolUse(index: number, call: { id: string; name: string; args: string }): ToolUseBlock {
  let input: Record<string, unknown>;
  try {
    const parsed: unknown = call.args.trim() === '' ? {} : JSON.parse(call.args);
    input = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { value: parsed };
  } catch {
    // Kept so the tool runner answers with a clear isError result instead of the turn failing.
    input = { invalidJsonArguments: call.args };
  }
  return { type: 'tool_use', id: call.id || `call_${index}`, name: call.name, input };
}

function stopReasonOf(reason: string | null): StopReason {
  switch (reason) {
    case 'stop':
      return 'end_turn';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'length':
      return 'max_tokens';
    case 'content_filter':
      return 'refusal';
    default:
      return 'other';
  }
}

function toChatTool(tool: ToolSpec): ChatCompletionTool {
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.inputSchema } };
}

function userPart(block: ContentBlock): ChatCompletionContentPart | undefined {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
      return { type: 'image_url', image_url: { url: `data:${block.source.mediaType};base64,${block.source.data}` } };
    case 'document':
      if (block.source.type === 'text') return { type: 'text', text: block.source.data };
      return { type: 'file', file: { file_data: `data:application/pdf;base64,${block.source.data}`, filename: block.source.name ?? 'document.pdf' } };
    default:
      return undefined;
  }
}

/** Chat Completions has no thinking input: thinking blocks stay in the history but are not sent. */
export function toChatMessages(system: string, messages: RuntimeMessage[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  if (system) out.push({ role: 'system', content: system });
  for (const m of messages) {
    for (const b of m.content) {
      if (b.type === 'tool_result') out.push({ role: 'tool', tool_call_id: b.toolUseId, content: toolResultText(b) || (b.isError ? 'error' : '(no output)') });
    }
    if (m.role === 'assistant') {
      const text = m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
      const calls = m.content.flatMap((b) => (b.type === 'tool_use' ? [b] : []));
      if (!text && calls.length === 0) continue;
      out.push({
        role: 'assistant',
        content: text || null,
        ...(calls.length > 0
          ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: stableStringify(c.input) } })) }
          : {}),
      });
    } else if (m.role === 'user' || m.role === 'system') {
      const parts = m.content.flatMap((b) => {
        const p = userPart(b);
        return p ? [p] : [];
      });
      if (parts.length === 0) continue;
      if (m.role === 'system') out.push({ role: 'system', content: parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n') });
      else out.push({ role: 'user', content: parts });
    }
  }
  return out;
}
