import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BYTES_PER_TOKEN, PromptCache } from './model-server-cache.ts';

/**
 * A scripted OpenAI-compatible model server on 127.0.0.1: `POST /v1/chat/completions`, streaming
 * (SSE chunks as OpenAI sends them, usage in a final chunk when `stream_options.include_usage`)
 * and non-streaming. It also speaks Anthropic's `POST /v1/messages` (streaming only, the events
 * the Messages API sends) so the Anthropic adapter is tested on its wire. Each request takes the
 * next reply of the queue, or when the queue is empty what the responder answers; every request
 * is recorded so tests can assert what the client sent back (tool results, tools, model name).
 * With `contextWindow` it refuses, as providers do, a request whose prompt and output cap exceed
 * the window; with `measureUsage` it reports the prompt's own token count and prompt-cache reads
 * and writes (model-server-cache.ts) instead of fixed figures.
 */

interface ScriptedToolCall {
  /** Default `call_<random>`. */
  id?: string;
  name: string;
  /** An object is sent as its JSON; a string is sent as is (to script malformed arguments). */
  arguments: Record<string, unknown> | string;
}

export interface ScriptedReply {
  text?: string;
  /** Sent as `reasoning_content` deltas, as DeepSeek and vLLM do; a thinking block on the Anthropic wire. */
  reasoning?: string;
  /** Anthropic wire: the thinking block's signature (sent as a signature_delta). */
  signature?: string;
  toolCalls?: ScriptedToolCall[];
  /** Default: 100 prompt tokens, 10 completion tokens, none cached. */
  usage?: { promptTokens: number; completionTokens: number; cachedTokens?: number; cacheWriteTokens?: number; reasoningTokens?: number };
  /** Characters per streamed text chunk (default 8). */
  chunkSize?: number;
  /** Pause before each streamed chunk: a slow reply, to interrupt a model call mid-stream. */
  chunkDelayMs?: number;
  /** Answer with this HTTP error instead of a completion. */
  error?: { status: number; message: string };
}

export interface RecordedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body (an Anthropic body on `/v1/messages`: its fields differ, cast as needed). */
  body: ChatRequestBody;
  /** The client closed the connection before the reply was complete. */
  aborted: boolean;
  /** The prompt's tokens by the server's tokenizer (cache reads and writes included). */
  promptTokens: number;
  /** The output cap the request asked for (`max_tokens` or `max_completion_tokens`). */
  maxTokens: number;
  /** Refused for exceeding the context window. */
  overWindow: boolean;
  /** The prompt cache's answer for this request (all input when nothing was cached). */
  cache: { readTokens: number; writeTokens: number };
}

interface ChatRequestBody {
  model: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages: Array<{
    role: string;
    content?: unknown;
    tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
    tool_call_id?: string;
  }>;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  [key: string]: unknown;
}

export interface ModelServer {
  /** `http://127.0.0.1:<port>/v1`, the OpenAI SDK's `baseURL`. */
  baseUrl: string;
  /** `http://127.0.0.1:<port>`, the Anthropic SDK's `baseURL` (it appends `/v1/messages`). */
  anthropicBaseUrl: string;
  apiKey: string;
  requests: RecordedRequest[];
  enqueue(...replies: ScriptedReply[]): void;
  /** Answers requests the queue has no reply for; undefined: the request fails as unscripted. */
  respondWith(responder: ((request: RecordedRequest) => ScriptedReply | undefined) | undefined): void;
  /** Replies not yet taken. */
  remaining(): number;
  /** Forgets queued replies, the responder, recorded requests and cached prompts (between tests). */
  reset(): void;
  close(): Promise<void>;
}

const DEFAULT_USAGE = { promptTokens: 100, completionTokens: 10, cachedTokens: 0 };

function usageOf(reply: ScriptedReply) {
  const u = { ...DEFAULT_USAGE, ...reply.usage };
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
  };
}

function toolCallsOf(reply: ScriptedReply) {
  return (reply.toolCalls ?? []).map((c) => ({
    id: c.id ?? `call_${randomBytes(6).toString('hex')}`,
    type: 'function' as const,
    function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
  }));
}

function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Usage as the server measured the prompt: Anthropic's input excludes cache reads and writes, OpenAI's includes reads. */
function measuredUsage(record: RecordedRequest, reply: ScriptedReply, anthropic: boolean): NonNullable<ScriptedReply['usage']> {
  const output = (reply.text ?? '') + (reply.reasoning ?? '') + JSON.stringify(reply.toolCalls ?? []);
  return {
    promptTokens: record.promptTokens - (anthropic ? record.cache.writeTokens : 0),
    completionTokens: Math.max(1, Math.ceil(Buffer.byteLength(output) / BYTES_PER_TOKEN)),
    cachedTokens: record.cache.readTokens,
    cacheWriteTokens: record.cache.writeTokens,
  };
}

export interface ModelServerOptions {
  apiKey?: string;
  /** Refuse requests whose prompt plus output cap exceed this many tokens. */
  contextWindow?: number;
  /** Report the measured prompt and cache tokens when a reply scripts no usage. */
  measureUsage?: boolean;
}

export async function startModelServer(opts: ModelServerOptions = {}): Promise<ModelServer> {
  const apiKey = opts.apiKey ?? `sk-test-${randomBytes(8).toString('hex')}`;
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  const cache = new PromptCache();
  let responder: ((request: RecordedRequest) => ScriptedReply | undefined) | undefined;

  const sendError = (res: http.ServerResponse, status: number, message: string, type = 'invalid_request_error') => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message, type, param: null, code: null } }));
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks).toString('utf8')).catch((err: unknown) => {
        if (!res.headersSent) sendError(res, 500, String(err), 'server_error');
        else res.destroy();
      });
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const anthropic = path === '/v1/messages';
    if (req.method !== 'POST' || (path !== '/v1/chat/completions' && !anthropic)) return sendError(res, 404, `no route ${req.method} ${path}`);
    // Anthropic takes `x-api-key`; its SDK since 1.x sends the key as a bearer token, which the API accepts too.
    const authorized = req.headers.authorization === `Bearer ${apiKey}` || (anthropic && req.headers['x-api-key'] === apiKey);
    if (!authorized) return sendError(res, 401, 'Incorrect API key provided', 'authentication_error');
    let body: ChatRequestBody;
    try {
      body = JSON.parse(raw) as ChatRequestBody;
    } catch {
      return sendError(res, 400, 'body is not JSON');
    }
    const counted = cache.count(body, anthropic);
    const promptTokens = counted.inputTokens + counted.cacheReadTokens + counted.cacheWriteTokens;
    const maxTokens = Number(body.max_tokens ?? body.max_completion_tokens ?? 0);
    const overWindow = opts.contextWindow !== undefined && promptTokens + maxTokens > opts.contextWindow;
    const record: RecordedRequest = {
      path,
      headers: req.headers,
      body,
      aborted: false,
      promptTokens,
      maxTokens,
      overWindow,
      cache: { readTokens: counted.cacheReadTokens, writeTokens: counted.cacheWriteTokens },
    };
    requests.push(record);
    let finished = false;
    res.on('close', () => {
      if (!finished) record.aborted = true;
    });
    if (overWindow) {
      // The providers' own wording for the same refusal.
      return sendError(
        res,
        400,
        anthropic
          ? `input length and \`max_tokens\` exceed context limit: ${promptTokens} + ${maxTokens} > ${opts.contextWindow}, decrease input length or \`max_tokens\` and try again`
          : `This model's maximum context length is ${opts.contextWindow} tokens. However, you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`,
      );
    }

    const scripted = queue.shift() ?? responder?.(record);
    if (!scripted) return sendError(res, 500, 'the scripted model server has no reply left for this request', 'server_error');
    if (scripted.error) return sendError(res, scripted.error.status, scripted.error.message, 'server_error');
    const reply = opts.measureUsage && !scripted.usage ? { ...scripted, usage: measuredUsage(record, scripted, anthropic) } : scripted;

    if (anthropic && !body.stream) return sendError(res, 400, 'the scripted server answers Anthropic requests only with stream: true');
    if (anthropic) return streamAnthropic(res, body, reply, () => (finished = true));

    const id = `chatcmpl-${randomBytes(6).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const calls = toolCallsOf(reply);
    const finishReason = calls.length > 0 ? 'tool_calls' : 'stop';

    if (!body.stream) {
      finished = true;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model: body.model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: reply.text ?? null,
                ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
                ...(calls.length > 0 ? { tool_calls: calls } : {}),
              },
              finish_reason: finishReason,
            },
          ],
          usage: usageOf(reply),
        }),
      );
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const size = reply.chunkSize ?? 8;
    const send = async (payload: unknown): Promise<boolean> => {
      if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
      if (res.destroyed || res.writableEnded) return false;
      res.write(`data: ${JSON.stringify(payload)}\n\n`);
      return true;
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model: body.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });

    const deltas: Array<Record<string, unknown>> = [{ role: 'assistant', content: '' }];
    for (const p of pieces(reply.reasoning ?? '', size)) deltas.push({ reasoning_content: p });
    for (const p of pieces(reply.text ?? '', size)) deltas.push({ content: p });
    calls.forEach((c, index) => {
      deltas.push({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] });
      for (const p of pieces(c.function.arguments, 16)) deltas.push({ tool_calls: [{ index, function: { arguments: p } }] });
    });
    for (const d of deltas) if (!(await send(chunk(d)))) return;
    if (!(await send(chunk({}, finishReason)))) return;
    if (body.stream_options?.include_usage) {
      if (!(await send({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage: usageOf(reply) }))) return;
    }
    finished = true;
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    anthropicBaseUrl: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    enqueue: (...replies) => queue.push(...replies),
    respondWith: (fn) => {
      responder = fn;
    },
    remaining: () => queue.length,
    reset: () => {
      queue.length = 0;
      requests.length = 0;
      responder = undefined;
      cache.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The event sequence of a streamed Anthropic Messages response. */
async function streamAnthropic(res: http.ServerResponse, body: ChatRequestBody, reply: ScriptedReply, onFinished: () => void): Promise<void> {
  const u = { ...DEFAULT_USAGE, cacheWriteTokens: 0, ...reply.usage };
  const size = reply.chunkSize ?? 8;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const events: Array<Record<string, unknown>> = [];
  events.push({
    type: 'message_start',
    message: {
      id: `msg_${randomBytes(6).toString('hex')}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: u.promptTokens - (u.cachedTokens ?? 0),
        output_tokens: 1,
        cache_read_input_tokens: u.cachedTokens ?? 0,
        cache_creation_input_tokens: u.cacheWriteTokens ?? 0,
      },
    },
  });
  let index = 0;
  if (reply.reasoning !== undefined) {
    events.push({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
    for (const p of pieces(reply.reasoning, size)) events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: p } });
    events.push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: reply.signature ?? '' } });
    events.push({ type: 'content_block_stop', index });
    index++;
  }
  if (reply.text !== undefined) {
    events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    for (const p of pieces(reply.text, size)) events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: p } });
    events.push({ type: 'content_block_stop', index });
    index++;
  }
  for (const c of toolCallsOf(reply)) {
    events.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: c.id, name: c.function.name, input: {} } });
    for (const p of pieces(c.function.arguments, 16)) events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: p } });
    events.push({ type: 'content_block_stop', index });
    index++;
  }
  const stop = (reply.toolCalls?.length ?? 0) > 0 ? 'tool_use' : 'end_turn';
  events.push({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: u.completionTokens } });
  events.push({ type: 'message_stop' });
  for (const e of events) {
    if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
    if (res.destroyed || res.writableEnded) return;
    res.write(`event: ${String(e.type)}\ndata: ${JSON.stringify(e)}\n\n`);
  }
  onFinished();
  res.end();
}
