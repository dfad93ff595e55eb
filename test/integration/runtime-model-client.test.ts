import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { toAnthropicMessages } from '../../src/agent/anthropic-messages.ts';
import { ContentBlockSchema, type RuntimeMessage } from '../../src/agent/content.ts';
import { createModelClient } from '../../src/agent/create-model-client.ts';
import { ModelCallFailed, type ModelDelta } from '../../src/agent/model-client.ts';
import { toChatMessages } from '../../src/agent/openai-chat.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';

describe('model client against the scripted OpenAI-compatible server', () => {
  let server: ModelServer;

  beforeAll(async () => {
    server = await startModelServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  beforeEach(() => {
    server.reset();
  });

  const client = () => createModelClient({ id: 'm1', provider: 'openai-compatible', baseUrl: server.baseUrl, apiKey: server.apiKey });
  const hello: RuntimeMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }];

  it('streams thinking and text, reports deltas and usage (cached tokens apart from input)', async () => {
    server.enqueue({
      reasoning: 'Let me think about it.',
      text: 'Hello there, friend!',
      usage: { promptTokens: 500, completionTokens: 42, cachedTokens: 300, reasoningTokens: 12 },
    });
    const deltas: ModelDelta[] = [];
    const res = await client().complete({ system: 'be brief', messages: hello, tools: [], onDelta: (d) => deltas.push(d) });

    expect(res).toEqual({
      content: [
        { type: 'thinking', thinking: 'Let me think about it.', signature: '', signatureProvider: 'generic-chat-completion-api' },
        { type: 'text', text: 'Hello there, friend!' },
      ],
      usage: { inputTokens: 200, outputTokens: 42, cacheReadTokens: 300, cacheWriteTokens: 0, thinkingTokens: 12 },
      stopReason: 'end_turn',
      interrupted: false,
    });
    for (const block of res.content) expect(ContentBlockSchema.parse(block)).toEqual(block);
    expect(deltas.filter((d) => d.type === 'text').length).toBeGreaterThan(1);
    expect(deltas.flatMap((d) => (d.type === 'text' ? [d.text] : [])).join('')).toBe('Hello there, friend!');
    const req = server.requests[0]!;
    expect(req.headers.authorization).toBe(`Bearer ${server.apiKey}`);
    expect(req.body).toMatchObject({ model: 'm1', stream: true, stream_options: { include_usage: true } });
    expect(req.body).not.toHaveProperty('tools');
  });

  it('returns the streamed tool calls with stop reason tool_use', async () => {
    server.enqueue({
      toolCalls: [
        { id: 'c1', name: 'read_file', arguments: { path: 'a.txt', offset: 2 } },
        { id: 'c2', name: 'glob', arguments: { pattern: '**/*' } },
      ],
    });
    const res = await client().complete({ system: '', messages: hello, tools: [{ name: 'read_file', description: 'read', inputSchema: { type: 'object' } }] });
    expect(res.stopReason).toBe('tool_use');
    expect(res.content).toEqual([
      { type: 'tool_use', id: 'c1', name: 'read_file', input: { path: 'a.txt', offset: 2 } },
      { type: 'tool_use', id: 'c2', name: 'glob', input: { pattern: '**/*' } },
    ]);
    expect(server.requests[0]!.body.tools).toEqual([
      { type: 'function', function: { name: 'read_file', description: 'read', parameters: { type: 'object' } } },
    ]);
    expect(server.requests[0]!.body.messages[0]!.role).toBe('user');
  });

  it('fails with ModelCallFailed on a provider error, and returns an empty interrupted completion when aborted first', async () => {
    const wrongKey = createModelClient({ id: 'm1', provider: 'openai-compatible', baseUrl: server.baseUrl, apiKey: 'sk-wrong' });
    const err = await wrongKey.complete({ system: '', messages: hello, tools: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelCallFailed);
    expect((err as ModelCallFailed).status).toBe(401);

    const res = await client().complete({ system: '', messages: hello, tools: [], signal: AbortSignal.abort() });
    expect(res).toMatchObject({ content: [], stopReason: 'interrupted', interrupted: true });
  });

  it('serves non-streaming completions too (the wire the openai SDK expects)', async () => {
    server.enqueue({ text: 'plain', toolCalls: [{ id: 'c9', name: 'glob', arguments: { pattern: '*' } }], usage: { promptTokens: 7, completionTokens: 3 } });
    const sdk = new OpenAI({ baseURL: server.baseUrl, apiKey: server.apiKey });
    const res = await sdk.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.choices[0]!.message.content).toBe('plain');
    expect(res.choices[0]!.finish_reason).toBe('tool_calls');
    expect(res.choices[0]!.message.tool_calls).toEqual([{ id: 'c9', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*"}' } }]);
    expect(res.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
  });
});

describe('model client against the scripted Anthropic Messages wire', () => {
  let server: ModelServer;

  beforeAll(async () => {
    server = await startModelServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('keeps thinking with its signature, streams text and tool calls, and counts cache reads and writes', async () => {
    const model = createModelClient({
      id: 'claude',
      provider: 'anthropic',
      baseUrl: server.anthropicBaseUrl,
      apiKey: server.apiKey,
      upstreamModel: 'claude-upstream',
      maxOutputTokens: 1024,
    });
    server.enqueue(
      {
        reasoning: 'The user wants a listing.',
        signature: 'EqQBCkYIBxgCKkB-signature',
        text: 'Listing files.',
        toolCalls: [{ id: 'toolu_1', name: 'glob', arguments: { pattern: '**/*.md' } }],
        usage: { promptTokens: 900, completionTokens: 60, cachedTokens: 600, cacheWriteTokens: 100 },
      },
      { text: 'Two files.', usage: { promptTokens: 1000, completionTokens: 5, cachedTokens: 900 } },
    );
    const deltas: ModelDelta[] = [];
    const first = await model.complete({
      system: 'sys prompt',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'list docs' }] }],
      tools: [{ name: 'glob', description: 'find files', inputSchema: { type: 'object', properties: { pattern: { type: 'string' } } } }],
      onDelta: (d) => deltas.push(d),
    });
    expect(first).toEqual({
      content: [
        { type: 'thinking', thinking: 'The user wants a listing.', signature: 'EqQBCkYIBxgCKkB-signature', signatureProvider: 'anthropic' },
        { type: 'text', text: 'Listing files.' },
        { type: 'tool_use', id: 'toolu_1', name: 'glob', input: { pattern: '**/*.md' } },
      ],
      usage: { inputTokens: 300, outputTokens: 60, cacheReadTokens: 600, cacheWriteTokens: 100, thinkingTokens: 0 },
      stopReason: 'tool_use',
      interrupted: false,
    });
    expect(deltas.flatMap((d) => (d.type === 'thinking' ? [d.thinking] : [])).join('')).toBe('The user wants a listing.');
    const req = server.requests[0]!;
    expect(req.path).toBe('/v1/messages');
    expect(req.headers.authorization === `Bearer ${server.apiKey}` || req.headers['x-api-key'] === server.apiKey).toBe(true);
    // The system prompt is a cache breakpoint (it caches the tools before it), and so is the last user turn.
    expect(req.body).toMatchObject({
      model: 'claude-upstream',
      max_tokens: 1024,
      system: [{ type: 'text', text: 'sys prompt', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'list docs', cache_control: { type: 'ephemeral' } }] }],
      stream: true,
    });
    expect(req.body.tools).toEqual([
      { name: 'glob', description: 'find files', input_schema: { type: 'object', properties: { pattern: { type: 'string' } } } },
    ]);

    const second = await model.complete({
      system: 'sys prompt',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'list docs' }] },
        { role: 'assistant', content: first.content },
        { role: 'tool', content: [{ type: 'tool_result', toolUseId: 'toolu_1', content: 'a.md\nb.md', isError: false }] },
      ],
      tools: [],
    });
    expect(second).toMatchObject({ content: [{ type: 'text', text: 'Two files.' }], stopReason: 'end_turn' });
    // The signed thinking block goes back verbatim, as the API requires with tool use.
    expect(server.requests[1]!.body.messages[0]).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'list docs', cache_control: { type: 'ephemeral' } }],
    });
    expect(server.requests[1]!.body.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'The user wants a listing.', signature: 'EqQBCkYIBxgCKkB-signature' },
          { type: 'text', text: 'Listing files.' },
          { type: 'tool_use', id: 'toolu_1', name: 'glob', input: { pattern: '**/*.md' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.md\nb.md', cache_control: { type: 'ephemeral' } }] },
    ]);
  });

  it('returns the partial text when interrupted mid-stream and drops unfinished thinking', async () => {
    const model = createModelClient({ id: 'claude', provider: 'anthropic', baseUrl: server.anthropicBaseUrl, apiKey: server.apiKey });
    server.enqueue({ text: 'word '.repeat(200), chunkSize: 5, chunkDelayMs: 10 });
    const ac = new AbortController();
    let seen = 0;
    const res = await model.complete({
      system: '',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'talk' }] }],
      tools: [],
      signal: ac.signal,
      onDelta: () => {
        if (++seen === 5) ac.abort();
      },
    });
    expect(res.interrupted).toBe(true);
    expect(res.stopReason).toBe('interrupted');
    expect(res.content).toHaveLength(1);
    const text = (res.content[0] as { text: string }).text;
    expect(text.startsWith('word word word word word')).toBe(true);
    expect(text.length).toBeLessThan(1000);

    // Thinking cut off before its signature cannot be sent back, so it is not kept.
    server.enqueue({ reasoning: 'hmm '.repeat(200), signature: 'sig', text: 'never', chunkSize: 4, chunkDelayMs: 10 });
    const thinker = new AbortController();
    let thoughts = 0;
    const cut = await model.complete({
      system: '',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'think' }] }],
      tools: [],
      signal: thinker.signal,
      onDelta: (d) => {
        if (d.type === 'thinking' && ++thoughts === 5) thinker.abort();
      },
    });
    expect(cut).toMatchObject({ content: [], interrupted: true });
  });
});

describe('history conversion', () => {
  const history: RuntimeMessage[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: 'iVBO' } },
        { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: 'notes' } },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'signed', signature: 'sig-1', signatureProvider: 'anthropic' },
        { type: 'thinking', thinking: 'foreign', signature: '', signatureProvider: 'generic-chat-completion-api' },
        { type: 'text', text: 'ok' },
        { type: 'tool_use', id: 't1', name: 'glob', input: { pattern: '*' } },
      ],
    },
    { role: 'tool', content: [{ type: 'tool_result', toolUseId: 't1', content: 'a.txt', isError: false }] },
    { role: 'user', content: [{ type: 'text', text: 'and now?' }] },
  ];

  it('maps to Chat Completions: tool calls on the assistant, results as tool messages, no thinking', () => {
    expect(toChatMessages('sys', history)).toEqual([
      { role: 'system', content: 'sys' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBO' } },
          { type: 'text', text: 'notes' },
        ],
      },
      { role: 'assistant', content: 'ok', tool_calls: [{ id: 't1', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*"}' } }] },
      { role: 'tool', tool_call_id: 't1', content: 'a.txt' },
      { role: 'user', content: [{ type: 'text', text: 'and now?' }] },
    ]);
  });

  it('maps to Anthropic Messages: signed thinking kept, foreign thinking dropped, tool results merged into one user turn', () => {
    expect(toAnthropicMessages(history)).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBO' } },
          { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'signed', signature: 'sig-1' },
          { type: 'text', text: 'ok' },
          { type: 'tool_use', id: 't1', name: 'glob', input: { pattern: '*' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: 'a.txt' },
          { type: 'text', text: 'and now?' },
        ],
      },
    ]);
  });
});
