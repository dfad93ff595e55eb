import type { ContentBlock, RuntimeMessage, ToolResultBlock } from './content.ts';

/** Old tool outputs longer than this are cut before anything is summarised or dropped. */
export const OLD_OUTPUT_MAX_CHARS = 2_000;
/** What a tool output is cut to when even the latest message must shrink to fit. */
export const LAST_RESORT_MAX_CHARS = 400;

/** Said where messages were dropped, so the model knows its view starts mid-conversation. */
export const DROPPED_NOTE = '[Earlier messages of this session were dropped to fit the model context window; the full history stays readable in the session.]';

function cut(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  // Head and tail together take half the limit, so a cut output is under the limit and never cut again.
  const keep = Math.floor(maxChars / 2);
  const head = text.slice(0, Math.ceil(keep * 0.6));
  const tail = text.slice(text.length - Math.floor(keep * 0.4));
  return `${head}\n[... ${text.length - head.length - tail.length} characters of this tool output were trimmed to fit the context window; run the tool again if you need them ...]\n${tail}`;
}

function trimResult(block: ToolResultBlock, maxChars: number): ToolResultBlock {
  if (typeof block.content === 'string') return block.content.length > maxChars ? { ...block, content: cut(block.content, maxChars) } : block;
  if (!block.content) return block;
  let changed = false;
  const content = block.content.map((b) => {
    if (b.type !== 'text' || b.text.length <= maxChars) return b;
    changed = true;
    return { ...b, text: cut(b.text, maxChars) };
  });
  return changed ? { ...block, content } : block;
}

/**
 * `messages` with the tool outputs of `messages[from..to)` longer than `maxChars` cut to their
 * head and tail. Untouched messages stay the same objects; cut ones are copies that keep `covers`.
 */
export function trimToolOutputs(messages: readonly RuntimeMessage[], maxChars: number, from = 0, to = messages.length): RuntimeMessage[] {
  return messages.map((m, i) => {
    if (i < from || i >= to || m.role !== 'tool') return m;
    let changed = false;
    const content = m.content.map((b): ContentBlock => {
      if (b.type !== 'tool_result') return b;
      const t = trimResult(b, maxChars);
      if (t !== b) changed = true;
      return t;
    });
    return changed ? { ...m, content } : m;
  });
}

function isDroppedNote(m: RuntimeMessage | undefined): boolean {
  return m?.role === 'user' && m.content.length === 1 && m.content[0]!.type === 'text' && m.content[0]!.text === DROPPED_NOTE;
}

/**
 * Drops the oldest message (with the tool results that answer it) and starts what is left with a
 * user message, as every provider wants: the dropped-messages note unless a user message leads.
 * Undefined when nothing can go: only the last message (or the last call with its results) is left.
 */
export function dropOldest(messages: readonly RuntimeMessage[]): RuntimeMessage[] | undefined {
  const start = isDroppedNote(messages[0]) ? 1 : 0;
  if (messages.length - start <= 1) return undefined;
  let next = start + 1;
  // A tool message answers the assistant message before it: never keep one without the other.
  while (next < messages.length && messages[next]!.role === 'tool') next++;
  if (next >= messages.length) return undefined;
  const rest = messages.slice(next);
  return rest[0]!.role === 'user' ? rest : [{ role: 'user', content: [{ type: 'text', text: DROPPED_NOTE }] }, ...rest];
}
