import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSshClient, type SshClient, type SshTarget } from '../../src/ssh/index.ts';
import type { RuntimeMessage } from '../../src/agent/content.ts';
import { createModelClient } from '../../src/agent/create-model-client.ts';
import type { ModelClient, Usage } from '../../src/agent/model-client.ts';
import { defaultTools } from '../../src/agent/tools.ts';
import { sshToolHost } from '../../src/agent/ssh-tool-host.ts';
import { runTurn, type TurnOptions } from '../../src/agent/turn.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { sshdMissing, startSshd, type TestSshd } from '../support/sshd.ts';
import { waitFor } from '../support/wait.ts';
import { skipWithout } from '../support/parts.ts';

const missing = sshdMissing();
const skip = skipWithout('the agent turn tests', missing);

const SYSTEM = 'You are a coding agent working on a remote computer.';

describe.skipIf(skip)('an agent turn against a scripted model and a real sshd computer', () => {
  let sshd: TestSshd;
  let ssh: SshClient;
  let target: SshTarget;
  let server: ModelServer;
  let model: ModelClient;
  let cwd: string;

  const pgrep = async (pattern: string) => (await ssh.exec(target, `pgrep -f -- '[${pattern[0]}]${pattern.slice(1)}' || true`)).stdout.trim();

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    sshd = await startSshd();
    ssh = createSshClient();
    target = { host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.privateKey, hostKeyFingerprint: sshd.hostKeyFingerprint };
    server = await startModelServer();
    model = createModelClient({
      id: 'scripted-coder',
      provider: 'openai-compatible',
      baseUrl: server.baseUrl,
      apiKey: server.apiKey,
      upstreamModel: 'upstream-coder-1',
    });
  });

  afterAll(async () => {
    await server?.close();
    await ssh?.close();
    await sshd?.stop();
  });

  beforeEach(async () => {
    server.reset();
    cwd = (await ssh.exec(target, 'mktemp -d')).stdout.trim();
  });

  afterEach(() => {
    // A test that leaves replies behind scripted more calls than the turn made.
    expect(server.remaining()).toBe(0);
  });

  function turn(overrides: Partial<TurnOptions> & { history?: RuntimeMessage[] } = {}) {
    const emitted: RuntimeMessage[] = [];
    const usages: Usage[] = [];
    const promise = runTurn({
      model,
      tools: defaultTools,
      host: sshToolHost(ssh, target, cwd),
      autonomyLevel: 'high',
      history: [{ role: 'user', content: [{ type: 'text', text: 'Please do the thing.' }] }],
      system: SYSTEM,
      signal: new AbortController().signal,
      onMessage: async (m) => {
        emitted.push(structuredClone(m));
      },
      onUsage: (u) => {
        usages.push(u);
      },
      ...overrides,
    });
    return { promise, emitted, usages };
  }

  it('writes, edits and reads a file, runs a command and ends with text', async () => {
    server.enqueue(
      {
        text: 'I will create the file.',
        toolCalls: [{ id: 'call_write', name: 'write_file', arguments: { path: 'notes/hello.txt', content: 'hello world\n' } }],
        usage: { promptTokens: 1000, completionTokens: 50, cachedTokens: 0 },
      },
      {
        toolCalls: [{ id: 'call_edit', name: 'edit_file', arguments: { path: 'notes/hello.txt', oldString: 'world', newString: 'agentplane' } }],
        usage: { promptTokens: 1200, completionTokens: 40, cachedTokens: 1000 },
      },
      {
        toolCalls: [
          { id: 'call_cat', name: 'run_command', arguments: { command: 'cat notes/hello.txt' } },
          { id: 'call_ls', name: 'run_command', arguments: { command: 'ls notes' } },
        ],
        usage: { promptTokens: 1400, completionTokens: 30, cachedTokens: 1200 },
      },
      { text: 'Done: notes/hello.txt says hello agentplane.', usage: { promptTokens: 1600, completionTokens: 20, cachedTokens: 1400 } },
    );
    const { promise, emitted, usages } = turn();
    const result = await promise;

    expect(result).toEqual({
      stopReason: 'end_turn',
      steps: 4,
      usage: { inputTokens: 1000 + 200 + 200 + 200, outputTokens: 140, cacheReadTokens: 3600, cacheWriteTokens: 0, thinkingTokens: 0 },
    });
    expect(usages).toEqual([
      { inputTokens: 1000, outputTokens: 50, cacheReadTokens: 0, cacheWriteTokens: 0, thinkingTokens: 0 },
      { inputTokens: 200, outputTokens: 40, cacheReadTokens: 1000, cacheWriteTokens: 0, thinkingTokens: 0 },
      { inputTokens: 200, outputTokens: 30, cacheReadTokens: 1200, cacheWriteTokens: 0, thinkingTokens: 0 },
      { inputTokens: 200, outputTokens: 20, cacheReadTokens: 1400, cacheWriteTokens: 0, thinkingTokens: 0 },
    ]);
    expect(emitted).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'I will create the file.' },
          { type: 'tool_use', id: 'call_write', name: 'write_file', input: { path: 'notes/hello.txt', content: 'hello world\n' } },
        ],
      },
      { role: 'tool', content: [{ type: 'tool_result', toolUseId: 'call_write', content: `Wrote 12 bytes to ${cwd}/notes/hello.txt`, isError: false }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_edit', name: 'edit_file', input: { path: 'notes/hello.txt', oldString: 'world', newString: 'agentplane' } }],
      },
      { role: 'tool', content: [{ type: 'tool_result', toolUseId: 'call_edit', content: `Replaced 1 occurrence in ${cwd}/notes/hello.txt`, isError: false }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_cat', name: 'run_command', input: { command: 'cat notes/hello.txt' } },
          { type: 'tool_use', id: 'call_ls', name: 'run_command', input: { command: 'ls notes' } },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool_result', toolUseId: 'call_cat', content: 'hello agentplane\n[exit code 0]', isError: false },
          { type: 'tool_result', toolUseId: 'call_ls', content: 'hello.txt\n[exit code 0]', isError: false },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Done: notes/hello.txt says hello agentplane.' }] },
    ]);
    expect((await ssh.readFile(target, `${cwd}/notes/hello.txt`)).toString()).toBe('hello agentplane\n');

    // What the model was sent: the system prompt, the tools, and each tool result under its call id.
    expect(server.requests).toHaveLength(4);
    const first = server.requests[0]!.body;
    expect(first.model).toBe('upstream-coder-1');
    expect(first.stream).toBe(true);
    expect(first.messages.slice(0, 2)).toEqual([
      { role: 'system', content: SYSTEM },
      { role: 'user', content: [{ type: 'text', text: 'Please do the thing.' }] },
    ]);
    expect(first.tools?.map((t) => t.function.name)).toEqual(['run_command', 'read_file', 'write_file', 'edit_file', 'list_directory', 'glob', 'search_text']);
    const last = server.requests[3]!.body.messages;
    expect(last.slice(-3)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_cat', type: 'function', function: { name: 'run_command', arguments: '{"command":"cat notes/hello.txt"}' } },
          { id: 'call_ls', type: 'function', function: { name: 'run_command', arguments: '{"command":"ls notes"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_cat', content: 'hello agentplane\n[exit code 0]' },
      { role: 'tool', tool_call_id: 'call_ls', content: 'hello.txt\n[exit code 0]' },
    ]);
    expect(last.find((m) => m.role === 'tool' && m.tool_call_id === 'call_write')?.content).toBe(`Wrote 12 bytes to ${cwd}/notes/hello.txt`);
  });

  it('interrupts a long-running shell tool: the process is gone and the turn ends interrupted with what was produced', async () => {
    const sleep = `sleep 60.${randomBytes(4).readUInt32BE(0)}`;
    server.enqueue({ text: 'Waiting a minute.', toolCalls: [{ id: 'call_sleep', name: 'run_command', arguments: { command: sleep } }] });
    const ac = new AbortController();
    const { promise, emitted } = turn({ signal: ac.signal });
    await waitFor('the sleep to run on the computer', async () => (await pgrep(sleep)) !== '');
    ac.abort();
    const result = await promise;

    expect(result.stopReason).toBe('interrupted');
    expect(result.steps).toBe(1);
    expect(emitted).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Waiting a minute.' },
          { type: 'tool_use', id: 'call_sleep', name: 'run_command', input: { command: sleep } },
        ],
      },
      {
        role: 'tool',
        content: [{ type: 'tool_result', toolUseId: 'call_sleep', content: 'Interrupted: the tool was stopped before it finished.', isError: true }],
      },
    ]);
    await waitFor('the interrupted sleep to be gone', async () => (await pgrep(sleep)) === '');
    expect(server.requests).toHaveLength(1);
  });

  it('interrupts a streaming model call and keeps the text streamed so far', async () => {
    const full = 'This is a long answer that streams slowly. '.repeat(20);
    server.enqueue({ text: full, chunkSize: 4, chunkDelayMs: 20 });
    const ac = new AbortController();
    let streamed = '';
    const { promise, emitted, usages } = turn({
      signal: ac.signal,
      onDelta: (d) => {
        if (d.type === 'text') streamed += d.text;
        if (streamed.length >= 40) ac.abort();
      },
    });
    const result = await promise;

    expect(result.stopReason).toBe('interrupted');
    expect(emitted).toHaveLength(1);
    expect(emitted[0]!.role).toBe('assistant');
    const text = (emitted[0]!.content[0] as { text: string }).text;
    expect(text.length).toBeGreaterThanOrEqual(40);
    expect(text.length).toBeLessThan(full.length);
    expect(full.startsWith(text)).toBe(true);
    // No usage arrived before the interrupt: the call counts as zero tokens.
    expect(usages).toEqual([{ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, thinkingTokens: 0 }]);
    await waitFor('the server to see the client go away', () => server.requests[0]?.aborted === true);
  });

  it('turns a failing tool into an isError result the model sees, and the turn goes on', async () => {
    server.enqueue(
      { toolCalls: [{ id: 'call_read', name: 'read_file', arguments: { path: 'does-not-exist.txt' } }] },
      { toolCalls: [{ id: 'call_bad', name: 'run_command', arguments: '{"command": ' }] },
      { text: 'The file does not exist.' },
    );
    const { promise, emitted } = turn();
    const result = await promise;

    expect(result.stopReason).toBe('end_turn');
    expect(emitted[1]).toEqual({
      role: 'tool',
      content: [{ type: 'tool_result', toolUseId: 'call_read', content: `${cwd}/does-not-exist.txt: no such file`, isError: true }],
    });
    const malformed = emitted[3]!.content[0] as { isError: boolean; content: string };
    expect(malformed.isError).toBe(true);
    expect(malformed.content).toMatch(/^Invalid input for run_command:/);
    expect(server.requests[1]!.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_read', content: `${cwd}/does-not-exist.txt: no such file` });
  });

  it('answers an unknown tool name with an isError result', async () => {
    server.enqueue({ toolCalls: [{ id: 'call_x', name: 'delete_everything', arguments: {} }] }, { text: 'Sorry.' });
    const { promise, emitted } = turn();
    expect((await promise).stopReason).toBe('end_turn');
    expect(emitted[1]).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool_result',
          toolUseId: 'call_x',
          content: 'Unknown tool "delete_everything". Available tools: run_command, read_file, write_file, edit_file, list_directory, glob, search_text.',
          isError: true,
        },
      ],
    });
  });

  it('does not run tools the autonomy level does not allow', async () => {
    server.enqueue(
      {
        toolCalls: [
          { id: 'call_w', name: 'write_file', arguments: { path: 'blocked.txt', content: 'x' } },
          { id: 'call_l', name: 'list_directory', arguments: {} },
        ],
      },
      { text: 'I need approval.' },
    );
    const { promise, emitted } = turn({ autonomyLevel: 'off' });
    expect((await promise).stopReason).toBe('end_turn');
    const [blocked, listed] = emitted[1]!.content as Array<{ content: string; isError: boolean }>;
    expect(blocked).toMatchObject({ isError: true, content: expect.stringMatching(/^write_file needs approval at autonomy level off/) });
    expect(listed).toMatchObject({ isError: false, content: expect.stringMatching(/^total /) });
    expect(await ssh.stat(target, `${cwd}/blocked.txt`)).toBeNull();
  });

  it('stops after the step cap, and reports a model error as an error', async () => {
    server.enqueue(
      { toolCalls: [{ name: 'run_command', arguments: { command: 'true' } }] },
      { toolCalls: [{ name: 'run_command', arguments: { command: 'true' } }] },
    );
    const capped = await turn({ maxSteps: 2 }).promise;
    expect(capped).toMatchObject({ stopReason: 'max_steps', steps: 2 });

    // A refusal for the context length is tried once more with a larger estimate; a second one ends the turn.
    server.enqueue({ error: { status: 400, message: 'context length exceeded' } }, { error: { status: 400, message: 'context length exceeded' } });
    const before = server.requests.length;
    const failed = await turn().promise;
    expect(failed.stopReason).toBe('error');
    expect(failed.error).toContain('HTTP 400');
    expect(failed.error).toContain('context length exceeded');
    expect(server.requests.length - before).toBe(2);

    server.enqueue({ error: { status: 400, message: 'tools[0].name is invalid' } });
    const refused = await turn().promise;
    expect(refused).toMatchObject({ stopReason: 'error', error: expect.stringContaining('tools[0].name is invalid') });
  });

  it('runs the read-only calls of one answer at once on the computer, keeps writes and commands in order, and answers in the model order', async () => {
    // Three FIFOs whose writers wait a second after a reader opens them: each search takes a second.
    await ssh.exec(target, `cd ${cwd} && for i in 1 2 3; do mkfifo slow-$i; (exec 3>slow-$i; sleep 1; echo "needle $i" >&3) </dev/null >/dev/null 2>&1 & done`);
    const calls = [
      { id: 'w1', name: 'write_file', arguments: { path: 'a.txt', content: 'one\n' } },
      { id: 's1', name: 'search_text', arguments: { pattern: 'needle', path: 'slow-1' } },
      { id: 's2', name: 'search_text', arguments: { pattern: 'needle', path: 'slow-2' } },
      { id: 's3', name: 'search_text', arguments: { pattern: 'needle', path: 'slow-3' } },
      { id: 'c1', name: 'run_command', arguments: { command: 'echo 1 >> log' } },
      { id: 'r1', name: 'read_file', arguments: { path: 'a.txt' } },
      { id: 'w2', name: 'write_file', arguments: { path: 'a.txt', content: 'two\n' } },
      { id: 'c2', name: 'run_command', arguments: { command: 'echo 2 >> log' } },
      { id: 'r2', name: 'read_file', arguments: { path: 'a.txt' } },
      { id: 'r3', name: 'read_file', arguments: { path: 'log' } },
    ];
    server.enqueue({ toolCalls: calls }, { text: 'Done.' });
    const durations = new Map<string, number>();
    const started = Date.now();
    const { promise, emitted } = turn({ onToolCall: ({ toolUse, durationMs }) => void durations.set(toolUse.id, durationMs) });
    expect((await promise).stopReason).toBe('end_turn');
    const elapsed = Date.now() - started;

    const results = emitted[1]!.content as Array<{ toolUseId: string; content: string; isError: boolean }>;
    expect(results.map((r) => r.toolUseId)).toEqual(calls.map((c) => c.id));
    expect(results.every((r) => !r.isError)).toBe(true);
    for (const i of [1, 2, 3]) expect(results[i]!.content).toBe(`1:needle ${i}`);
    // Each read saw the writes the model asked for before it, and the commands ran in order.
    expect(results[5]!.content).toBe('one\n');
    expect(results[8]!.content).toBe('two\n');
    expect(results[9]!.content).toBe('1\n2\n');
    // Three one-second searches, timed on the computer's sshd: together they took about one second, not three.
    for (const id of ['s1', 's2', 's3']) expect(durations.get(id)).toBeGreaterThanOrEqual(950);
    expect(elapsed).toBeLessThan(2_500);
  });
});
