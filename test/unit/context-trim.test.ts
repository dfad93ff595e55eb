import { describe, expect, it } from 'vitest';
import type { RuntimeMessage } from '../../src/agent/content.ts';
import { contextLimits } from '../../src/agent/context-limits.ts';
import { DROPPED_NOTE, dropOldest, trimToolOutputs } from '../../src/agent/context-trim.ts';
import { TokenEstimator } from '../../src/agent/token-estimate.ts';
import { toolBatches } from '../../src/agent/tool-batches.ts';

const user = (text: string): RuntimeMessage => ({ role: 'user', content: [{ type: 'text', text }] });
const call = (id: string): RuntimeMessage => ({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'read_file', input: { path: id } }] });
const result = (id: string, content: string): RuntimeMessage => ({ role: 'tool', content: [{ type: 'tool_result', toolUseId: id, content }] });

describe('dropping the oldest messages', () => {
  it('drops a call with its results, starts with the note, and stops at the last call', () => {
    const history = [user('go'), call('a'), result('a', 'A'), call('b'), result('b', 'B')];
    const once = dropOldest(history)!;
    expect(once).toEqual([user(DROPPED_NOTE), call('a'), result('a', 'A'), call('b'), result('b', 'B')]);
    const twice = dropOldest(once)!;
    // The call went with its result: no tool result is ever left without its call.
    expect(twice).toEqual([user(DROPPED_NOTE), call('b'), result('b', 'B')]);
    expect(dropOldest(twice)).toBeUndefined();
  });

  it('needs no note when a user message leads what is left', () => {
    const once = dropOldest([user('one'), call('a'), result('a', 'A'), user('two')])!;
    expect(once).toEqual([user(DROPPED_NOTE), call('a'), result('a', 'A'), user('two')]);
    expect(dropOldest(once)).toEqual([user('two')]);
    expect(dropOldest([user('only')])).toBeUndefined();
  });
});

describe('trimming tool outputs', () => {
  it('cuts long outputs in the given range to head and tail under the limit, once, and keeps covers', () => {
    const long = `${'h'.repeat(3000)}${'t'.repeat(3000)}`;
    const old = { ...result('a', long), covers: { fromSeq: 3, toSeq: 3 } };
    const recent = result('b', long);
    const trimmed = trimToolOutputs([user('go'), call('a'), old, call('b'), recent], 2000, 0, 3);
    const cut = trimmed[2]!.content[0] as { content: string };
    expect(cut.content.length).toBeLessThanOrEqual(2000);
    expect(cut.content.startsWith('hhh')).toBe(true);
    expect(cut.content.endsWith('ttt')).toBe(true);
    expect(cut.content).toContain('characters of this tool output were trimmed');
    expect(trimmed[2]!.covers).toEqual({ fromSeq: 3, toSeq: 3 });
    expect(trimmed[4]).toBe(recent);
    expect(trimToolOutputs(trimmed, 2000, 0, 3)[2]).toBe(trimmed[2]);
  });
});

describe('running tool calls together', () => {
  it('groups consecutive concurrent calls and keeps every other call alone, in order', () => {
    const reads = new Set(['r1', 'r2', 'r3', 'r4']);
    expect(toolBatches(['r1', 'r2', 'w1', 'r3', 'c1', 'c2', 'r4'], (c) => reads.has(c))).toEqual([['r1', 'r2'], ['w1'], ['r3'], ['c1'], ['c2'], ['r4']]);
  });
});

describe('the request-size estimate', () => {
  it('errs high before any usage, then follows the tokens the provider reports, with a margin', () => {
    const estimator = new TokenEstimator({ id: `m-${Math.random()}`, provider: 'openai-compatible', baseUrl: 'http://x' });
    const req = { system: 's'.repeat(1000), tools: [], messages: [user('x'.repeat(9000))] };
    const size = estimator.measure(req);
    expect(estimator.tokens(size)).toBeGreaterThan(10_000 / 4);
    estimator.observe(size, { inputTokens: 1500, cacheReadTokens: 1000, cacheWriteTokens: 0, outputTokens: 5, thinkingTokens: 0 });
    const calibrated = estimator.tokens(size);
    expect(calibrated).toBeGreaterThan(2500);
    expect(calibrated).toBeLessThan(2500 * 1.15);
  });

  it('keeps an output reserve the input can live with', () => {
    expect(contextLimits({ provider: 'anthropic' })).toEqual({ contextWindow: 200_000, maxOutputTokens: 8192 });
    expect(contextLimits({ provider: 'openai-compatible', contextWindow: 8000 })).toEqual({ contextWindow: 8000, maxOutputTokens: 2000 });
    expect(contextLimits({ provider: 'openai-compatible', contextWindow: 8000, maxOutputTokens: 6000 })).toEqual({
      contextWindow: 8000,
      maxOutputTokens: 2000,
    });
  });
});
