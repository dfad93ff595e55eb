import { createHash } from 'node:crypto';

/**
 * The scripted model server's tokenizer and prompt caches. Tokens: one per 4 bytes of the JSON of
 * each request part, a stand-in for a real tokenizer that the runtime's estimate has to learn.
 * Caches behave as the providers document them, on exact bytes:
 * - Anthropic: a prefix is written at each `cache_control` breakpoint and read back when a later
 *   request has a breakpoint at the end of the same bytes (tools, then system, then message blocks).
 * - OpenAI: prefixes of 1,024 tokens and more are cached automatically, reads in 128-token steps.
 */

export const BYTES_PER_TOKEN = 4;

interface Segment {
  bytes: number;
  json: string;
  breakpoint: boolean;
}

export interface PromptCount {
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

const tokens = (bytes: number) => Math.ceil(bytes / BYTES_PER_TOKEN);

function withoutCacheControl(value: Record<string, unknown>): { json: string; breakpoint: boolean } {
  const { cache_control, ...rest } = value;
  return { json: JSON.stringify(rest), breakpoint: cache_control !== undefined };
}

function segment(value: Record<string, unknown>): Segment {
  const s = withoutCacheControl(value);
  return { ...s, bytes: Buffer.byteLength(s.json) };
}

type Body = { system?: unknown; tools?: unknown[]; messages: Array<{ role: string; content?: unknown; [k: string]: unknown }> };

function anthropicSegments(body: Body): Segment[] {
  const out: Segment[] = [];
  for (const t of body.tools ?? []) out.push(segment(t as Record<string, unknown>));
  if (typeof body.system === 'string') out.push(segment({ type: 'text', text: body.system }));
  else for (const b of (body.system as Record<string, unknown>[] | undefined) ?? []) out.push(segment(b));
  for (const m of body.messages) {
    if (typeof m.content === 'string') out.push(segment({ role: m.role, type: 'text', text: m.content }));
    else for (const b of m.content as Record<string, unknown>[]) out.push(segment({ role: m.role, ...b }));
  }
  return out;
}

function openAiSegments(body: Body): Segment[] {
  return [segment({ tools: body.tools ?? [] }), ...body.messages.map((m) => segment(m))];
}

/** One server's caches: every prefix hash it has stored. */
export class PromptCache {
  private readonly stored = new Set<string>();

  count(body: Body, anthropic: boolean): PromptCount {
    const segments = anthropic ? anthropicSegments(body) : openAiSegments(body);
    const total = tokens(segments.reduce((n, s) => n + s.bytes, 0));
    const hash = createHash('sha256');
    const prefixes: { hash: string; tokens: number; breakpoint: boolean }[] = [];
    let bytes = 0;
    for (const s of segments) {
      hash.update(s.json);
      hash.update('\0');
      bytes += s.bytes;
      prefixes.push({ hash: hash.copy().digest('hex'), tokens: tokens(bytes), breakpoint: s.breakpoint });
    }
    return anthropic ? this.anthropic(prefixes, total) : this.openAi(prefixes, total);
  }

  private anthropic(prefixes: { hash: string; tokens: number; breakpoint: boolean }[], total: number): PromptCount {
    const marks = prefixes.filter((p) => p.breakpoint);
    const hit = marks.findLast((p) => this.stored.has(p.hash));
    const read = hit?.tokens ?? 0;
    const last = marks.at(-1);
    const write = last && last.tokens > read ? last.tokens - read : 0;
    for (const p of marks) this.stored.add(p.hash);
    return { inputTokens: total - read - write, cacheReadTokens: read, cacheWriteTokens: write };
  }

  private openAi(prefixes: { hash: string; tokens: number }[], total: number): PromptCount {
    const hit = prefixes.findLast((p) => p.tokens >= 1024 && this.stored.has(p.hash));
    const read = hit ? Math.floor(hit.tokens / 128) * 128 : 0;
    for (const p of prefixes) if (p.tokens >= 1024) this.stored.add(p.hash);
    return { inputTokens: total - read, cacheReadTokens: read, cacheWriteTokens: 0 };
  }

  clear(): void {
    this.stored.clear();
  }
}
