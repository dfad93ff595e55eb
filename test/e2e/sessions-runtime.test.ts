import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { recordEvents } from '../../src/modules/analytics/events.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { sessionTurnJob } from '../../src/modules/sessions/job-kinds.ts';
import { reapStuckTurns, STOPPED_TURN, STUCK_AFTER_MS } from '../../src/modules/sessions/reaper.ts';
import { appendMessage } from '../../src/modules/sessions/store.ts';
import { CRASHED_TOOL } from '../../src/modules/sessions/turn-runner.ts';
import type { TestApi } from '../support/api.ts';
import { GIT_COMMIT, skipMachineTests, type TestMachine } from '../support/machine.ts';
import type { ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel } from '../support/models-file.ts';
import { startSessionHarness, type SessionHarness } from '../support/session-harness.ts';
import { BACKENDS } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

if (skipMachineTests) console.warn('skipping the agent runtime e2e tests: sshd is missing');

/**
 * Sessions driven end to end through HTTP: the server's own worker runs each turn against a
 * scripted OpenAI-compatible model server, and the tools run on a real sshd machine.
 */
describe.skipIf(skipMachineTests).each(BACKENDS)('agent turns through the API on %s', (backend) => {
  let harness: SessionHarness;
  let api: TestApi;
  let machine: TestMachine;
  let model: ModelServer;
  let computerId: string;
  let user: string;
  let repo: string;

  beforeAll(async () => {
    harness = await startSessionHarness(backend, {
      computerName: 'runtime-box',
      models: (m) => ({ models: [coderModel(m)], keys: { [CODER_KEY_ENV]: m.apiKey } }),
    });
    ({ api, machine, model, computerId, user } = harness);
  });

  afterAll(() => harness?.close());

  beforeEach(async () => {
    model.reset();
    repo = `${machine.scratch}/repo-${Math.random().toString(36).slice(2, 8)}`;
    await machine.sh(`mkdir -p ${repo} && cd ${repo} && git init -q && echo '# demo' > README.md && git add -A && ${GIT_COMMIT} -m init`);
  });

  afterEach(() => {
    // Replies left over mean the runtime made fewer model calls than the test scripted.
    expect(model.remaining()).toBe(0);
  });

  const newSession = async (settings: Record<string, unknown> = {}) => {
    const res = await api.call('POST', '/api/v0/sessions', {
      as: user,
      body: { computerId, cwd: repo, sessionSettings: { model: 'coder', autonomyLevel: 'high', ...settings } },
    });
    expect(res.status, res.body.detail).toBe(201);
    return res.body.sessionId as string;
  };
  const send = (sessionId: string, body: Record<string, unknown>) => api.call('POST', `/api/v0/sessions/${sessionId}/messages`, { as: user, body });
  const session = async (sessionId: string) => (await api.call('GET', `/api/v0/sessions/${sessionId}`, { as: user })).body;
  const until = (sessionId: string, status: string, timeoutMs = 20_000) =>
    waitFor(`session ${sessionId} ${status}`, async () => (await session(sessionId)).status === status, timeoutMs, 100);
  /** The whole history, oldest first. */
  const history = async (sessionId: string) => {
    const res = await api.call('GET', `/api/v0/sessions/${sessionId}/messages?limit=100`, { as: user });
    expect(res.status).toBe(200);
    return [...res.body.messages].reverse();
  };
  /** Pids of processes on the machine whose command line matches (the bracket keeps pgrep's own shell out). */
  const remote = async (pattern: string) => (await machine.sh(`pgrep -f -- '[${pattern[0]}]${pattern.slice(1)}' || true`)).trim();

  it('runs a turn that writes and edits a file and commits it, recorded as the spec shapes it, with usage, credits and analytics', async () => {
    const id = await newSession();
    model.enqueue(
      { toolCalls: [{ id: 'call_w', name: 'write_file', arguments: { path: 'src/hello.ts', content: 'export const hello = 1;\n' } }] },
      { toolCalls: [{ id: 'call_e', name: 'edit_file', arguments: { path: 'src/hello.ts', oldString: '= 1', newString: '= 2' } }] },
      { toolCalls: [{ id: 'call_c', name: 'run_command', arguments: { command: `git add -A && ${GIT_COMMIT} -m 'add hello' && git log --oneline | wc -l` } }] },
      { text: 'Added src/hello.ts and committed it.', usage: { promptTokens: 100, completionTokens: 10, reasoningTokens: 7 } },
    );
    const res = await send(id, { text: 'Add a hello module and commit it.', waitForCompletion: true, waitTimeoutMs: 30_000 });
    expect(res.status, res.body.detail).toBe(200);
    expect(res.body).toEqual({ messageId: expect.any(String), status: 'idle' });

    expect(await machine.sh(`cat ${repo}/src/hello.ts`)).toBe('export const hello = 2;\n');
    expect((await machine.sh(`cd ${repo} && git log --format=%s -1`)).trim()).toBe('add hello');

    const messages = await history(id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    expect(messages[0]).toMatchObject({ id: res.body.messageId, content: [{ type: 'text', text: 'Add a hello module and commit it.' }] });
    expect(messages[1]).toMatchObject({
      modelId: 'coder',
      content: [{ type: 'tool_use', id: 'call_w', name: 'write_file', input: { path: 'src/hello.ts' } }],
    });
    expect(messages[2].content).toEqual([{ type: 'tool_result', toolUseId: 'call_w', content: `Wrote 24 bytes to ${repo}/src/hello.ts`, isError: false }]);
    expect(messages[6].content[0]).toMatchObject({ toolUseId: 'call_c', isError: false, content: expect.stringContaining('2\n[exit code 0]') });
    expect(messages[7].content).toEqual([{ type: 'text', text: 'Added src/hello.ts and committed it.' }]);
    // What the model was sent back: the tool results of the calls it made, and the tools it may use.
    expect(model.requests).toHaveLength(4);
    expect(model.requests[0]!.body.model).toBe('upstream-coder');
    expect(model.requests[0]!.body.tools!.map((t) => t.function.name)).toEqual(
      expect.arrayContaining(['run_command', 'read_file', 'write_file', 'edit_file', 'task']),
    );
    expect(model.requests[1]!.body.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_w' });

    const detail = await session(id);
    expect(detail).toMatchObject({ status: 'idle', messageCount: 8, completedAt: expect.any(Number), title: 'Add a hello module and commit it.' });
    // Four calls of 100 input and 10 output tokens at 1000 and 5000 credits per million.
    expect(detail.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 400, outputTokens: 40, thinkingTokens: 7, serviceCredits: 0.6 });
    expect(detail.sessionSettings.inclusiveTokenUsage).toMatchObject({ inputTokens: 400, outputTokens: 40, serviceCredits: 0.6 });
    expect(detail.serviceCredits).toBe(0.6);
    expect(detail.sessionSettings.assistantActiveTimeMs).toBeGreaterThan(0);

    const events = await api.db.prisma.analyticsEvent.groupBy({ by: ['kind'], where: { sessionId: id }, _count: true, _sum: { serviceCredits: true } });
    const byKind = Object.fromEntries(events.map((e) => [e.kind, e._count]));
    expect(byKind).toEqual({
      session_started: 1,
      message: 5,
      user_turn: 1,
      token_usage: 4,
      tool_call: 3,
      file_created: 1,
      file_edited: 1,
      git_commit: 1,
    });
    expect(events.find((e) => e.kind === 'token_usage')!._sum.serviceCredits).toBeCloseTo(0.6, 9);
    const files = await api.db.prisma.analyticsEvent.findMany({ where: { sessionId: id, kind: { in: ['file_created', 'file_edited'] } } });
    expect(files.map((f) => [f.kind, f.extension, f.language]).sort()).toEqual([
      ['file_created', 'ts', 'TypeScript'],
      ['file_edited', 'ts', 'TypeScript'],
    ]);
  });

  it('interrupt kills the running command on the computer and ends the turn with what was produced', async () => {
    const id = await newSession();
    const marker = `ap-interrupt-${Date.now()}`;
    model.enqueue({ text: 'Running it now.', toolCalls: [{ id: 'call_long', name: 'run_command', arguments: { command: `sleep 300; echo ${marker}` } }] });
    const sent = await send(id, { text: 'Run the long job.' });
    expect(['pending', 'running']).toContain(sent.body.status);
    await waitFor('the long command on the machine', async () => (await remote(`sleep 300; echo ${marker}`)) !== '', 20_000, 100);
    const res = await api.call('POST', `/api/v0/sessions/${id}/interrupt`, { as: user });
    expect(res).toMatchObject({ status: 200, body: { status: 'running' } });
    await until(id, 'idle', 10_000);
    expect(await remote(`sleep 300; echo ${marker}`)).toBe('');
    const messages = await history(id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(messages[1].content).toEqual([
      { type: 'text', text: 'Running it now.' },
      { type: 'tool_use', id: 'call_long', name: 'run_command', input: { command: `sleep 300; echo ${marker}` } },
    ]);
    expect(messages[2].content[0]).toMatchObject({
      type: 'tool_result',
      toolUseId: 'call_long',
      isError: true,
      content: expect.stringMatching(/interrupted/i),
    });
    // The model was not called again, and an interrupt of an idle session changes nothing.
    expect(model.requests).toHaveLength(1);
    expect((await api.call('POST', `/api/v0/sessions/${id}/interrupt`, { as: user })).body).toEqual({ status: 'idle' });
    expect((await api.db.prisma.session.findUniqueOrThrow({ where: { id } })).interruptRequestedAt).toBeNull();
  });

  it('queues a message sent while a turn runs and answers it in the next turn, after the running one', async () => {
    const id = await newSession();
    model.enqueue(
      { toolCalls: [{ id: 'call_s', name: 'run_command', arguments: { command: 'sleep 2; echo slept' } }] },
      { text: 'First done.' },
      { text: 'Second done.' },
    );
    await send(id, { text: 'first' });
    await until(id, 'running');
    await waitFor('the first tool call', () => model.requests.length === 1);
    const second = await send(id, { text: 'second' });
    expect(second.body.status).toBe('running');
    await until(id, 'idle', 20_000);
    const messages = await history(id);
    const texts = messages.map((m) => `${m.role}:${m.content.map((b: { type: string; text?: string }) => b.text ?? b.type).join('|')}`);
    expect(texts).toEqual(['user:first', 'assistant:tool_use', 'tool:tool_result', 'assistant:First done.', 'user:second', 'assistant:Second done.']);
    expect(model.requests).toHaveLength(3);
    // The first turn's second call never saw the queued message; the next turn did, at the end.
    expect(JSON.stringify(model.requests[1]!.body.messages)).not.toContain('second');
    expect(model.requests[2]!.body.messages.at(-1)).toMatchObject({ role: 'user', content: [{ type: 'text', text: 'second' }] });
  });

  it('adds a subagent’s usage to its parent’s inclusive usage and credits', async () => {
    const id = await newSession();
    model.enqueue(
      { toolCalls: [{ id: 'call_t', name: 'task', arguments: { description: 'count files', prompt: 'Count the files in the repository.' } }] },
      { text: 'There is 1 file.', usage: { promptTokens: 50, completionTokens: 4 } },
      { text: 'The subagent counted 1 file.' },
    );
    const res = await send(id, { text: 'Delegate the counting.', waitForCompletion: true, waitTimeoutMs: 30_000 });
    expect(res.body.status).toBe('idle');
    const parent = await session(id);
    const [childId, childUsage] = Object.entries(parent.sessionSettings.childInclusiveTokenUsageBySessionId)[0] as [string, Record<string, number>];
    // Child: 50 in, 4 out = 0.05 + 0.02 credits; parent: 2 x (100 in, 10 out) = 0.3.
    expect(childUsage).toMatchObject({ inputTokens: 50, outputTokens: 4, serviceCredits: 0.07 });
    expect(parent.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 200, outputTokens: 20, serviceCredits: 0.3 });
    expect(parent.sessionSettings.inclusiveTokenUsage).toMatchObject({ inputTokens: 250, outputTokens: 24 });
    expect(parent.sessionSettings.inclusiveTokenUsage.serviceCredits).toBeCloseTo(0.37, 9);
    expect(parent.serviceCredits).toBeCloseTo(0.37, 9);

    const child = await session(childId);
    expect(child).toMatchObject({ status: 'idle', parent_session_id: id, title: 'count files' });
    expect((await history(childId)).map((m) => m.content[0].text)).toEqual(['Count the files in the repository.', 'There is 1 file.']);
    const result = (await history(id))[2].content[0];
    expect(result).toMatchObject({ toolUseId: 'call_t', isError: false, content: expect.stringContaining('There is 1 file.') });
    // Subagent sessions are not listed among the user's sessions.
    const list = await api.call('GET', '/api/v0/sessions?limit=100', { as: user });
    expect(list.body.sessions.map((s: { sessionId: string }) => s.sessionId)).not.toContain(childId);
  });

  it('refuses to start a turn once the user’s credits limit is used up, saying so in the history', async () => {
    const id = await newSession();
    const member = api.acme.members.user;
    await api.call('PUT', '/api/v0/organization/usage/limits/users', {
      as: api.acme.members.owner.apiKey,
      body: { users: [{ email: member.email, limit: 1_000_000 }] },
    });
    const spent = { kind: 'token_usage' as const, organizationId: api.acme.id, userId: member.userId, model: 'coder', modelTier: 'standard' as const };
    await recordEvents(api.db.prisma, [{ ...spent, occurredAt: new Date(), inputTokens: 10, outputTokens: 0, serviceCredits: 1_000_000 }]);
    try {
      const res = await send(id, { text: 'Do more work.', waitForCompletion: true, waitTimeoutMs: 20_000 });
      expect(res.body.status).toBe('idle');
      const last = (await history(id)).at(-1);
      expect(last).toMatchObject({
        role: 'assistant',
        isError: true,
        content: [{ type: 'text', text: expect.stringMatching(/credits limit of 1000000 for this month is used up/) }],
      });
      expect(model.requests).toHaveLength(0);
    } finally {
      await api.db.prisma.analyticsEvent.deleteMany({ where: { userId: member.userId, serviceCredits: 1_000_000 } });
    }
  });

  it('ends a turn whose model fails with an isError message, and the session takes the next message', async () => {
    const id = await newSession();
    model.enqueue({ error: { status: 400, message: 'tools[0].input_schema is invalid' } }, { text: 'Fine now.' });
    const failed = await send(id, { text: 'Try.', waitForCompletion: true, waitTimeoutMs: 20_000 });
    expect(failed.body.status).toBe('idle');
    expect((await history(id)).at(-1)).toMatchObject({
      role: 'assistant',
      isError: true,
      content: [{ text: expect.stringMatching(/tools\[0\].input_schema is invalid/) }],
    });
    const ok = await send(id, { text: 'Again.', waitForCompletion: true, waitTimeoutMs: 20_000 });
    expect(ok.body.status).toBe('idle');
    expect((await history(id)).at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'Fine now.' }] });
  });

  it('continues a turn whose worker died mid-tool: the unanswered call gets an error result and the model goes on', async () => {
    // What a killed worker leaves: a running session whose last message is an unanswered tool call.
    const id = await newSession();
    const now = new Date();
    await api.db.prisma.$transaction(async (tx) => {
      await appendMessage(tx, id, { role: 'user', content: [{ type: 'text', text: 'Build it.' }], queueStatus: 'consumed' }, now);
      await appendMessage(
        tx,
        id,
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_dead', name: 'run_command', input: { command: 'make' } }] },
        now,
      );
      await tx.session.update({ where: { id }, data: { status: 'running', turnHeartbeatAt: now } });
    });
    model.enqueue({ text: 'The build was cut off; please check it.' });
    await api.queue.send(sessionTurnJob, { sessionId: id });
    await until(id, 'idle');
    const messages = await history(id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[2].content).toEqual([{ type: 'tool_result', toolUseId: 'call_dead', content: CRASHED_TOOL, isError: true }]);
    expect(model.requests[0]!.body.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_dead', content: CRASHED_TOOL });
  });

  it("calls an organization's custom:<id> model with its upstream name, base URL and key", async () => {
    const put = await api.call('PUT', '/api/v0/organization/enterprise-controls', {
      as: api.acme.members.owner.apiKey,
      body: { settings: { customModels: [{ id: 'house', model: 'house-llm-7b', baseUrl: model.baseUrl, apiKey: model.apiKey }] } },
    });
    expect(put.status, put.body.detail).toBe(200);
    const id = await newSession({ model: 'custom:house' });
    model.enqueue({ text: 'Hello from the house model.' });
    expect((await send(id, { text: 'hi', waitForCompletion: true, waitTimeoutMs: 20_000 })).body.status).toBe('idle');
    expect(model.requests[0]!.body.model).toBe('house-llm-7b');
    expect(model.requests[0]!.headers.authorization).toBe(`Bearer ${model.apiKey}`);
    expect((await history(id)).at(-1)).toMatchObject({ modelId: 'custom:house', content: [{ text: 'Hello from the house model.' }] });
    // Without pricing a call costs its billable tokens: 100 input + 10 output.
    expect((await session(id)).sessionSettings.tokenUsage.serviceCredits).toBe(110);
  });

  it('keeps calling a custom model with its key after the masked settings are edited and sent back', async () => {
    const owner = api.acme.members.owner.apiKey;
    const controls = '/api/v0/organization/enterprise-controls';
    await api.call('PUT', controls, {
      as: owner,
      body: { settings: { customModels: [{ id: 'house', model: 'house-llm-7b', baseUrl: model.baseUrl, apiKey: model.apiKey }] } },
    });
    const got = (await api.call('GET', controls, { as: owner })).body;
    expect(got.settings.customModels[0].apiKey).toBe(`••••${model.apiKey.slice(-4)}`);
    const put = await api.call('PUT', controls, {
      as: owner,
      body: { settings: { ...got.settings, customModels: [{ ...got.settings.customModels[0], model: 'house-llm-8b' }] } },
    });
    expect(put.status, put.body.detail).toBe(200);
    const org = await api.db.prisma.organization.findUniqueOrThrow({ where: { id: api.acme.id } });
    expect(JSON.stringify(org.enterpriseSettings)).not.toContain(model.apiKey);

    const id = await newSession({ model: 'custom:house' });
    model.enqueue({ text: 'Still here.' });
    expect((await send(id, { text: 'hi', waitForCompletion: true, waitTimeoutMs: 20_000 })).body.status).toBe('idle');
    expect(model.requests[0]!.body.model).toBe('house-llm-8b');
    expect(model.requests[0]!.headers.authorization).toBe(`Bearer ${model.apiKey}`);
  });

  it('an interrupt that arrives before the turn starts cancels it, leaving the message unanswered', async () => {
    const id = await newSession();
    const now = new Date();
    await appendMessage(api.db.prisma, id, { role: 'user', content: [{ type: 'text', text: 'never mind' }], queueStatus: 'queued' }, now);
    await api.db.prisma.session.update({ where: { id }, data: { status: 'pending', interruptRequestedAt: now } });
    await api.queue.send(sessionTurnJob, { sessionId: id });
    await until(id, 'idle');
    expect(model.requests).toHaveLength(0);
    expect((await history(id)).map((m) => m.role)).toEqual(['user']);
    const stored = await api.db.prisma.session.findUniqueOrThrow({ where: { id } });
    expect(stored.interruptRequestedAt).toBeNull();
    expect(await api.db.prisma.sessionMessage.count({ where: { sessionId: id, queueStatus: 'queued' } })).toBe(0);
  });

  it('reaps a turn whose worker stopped beating and re-sends the job of a session left pending', async () => {
    const stuck = await newSession();
    const waiting = await newSession();
    const now = new Date();
    await api.db.prisma.session.update({ where: { id: stuck }, data: { status: 'running', turnHeartbeatAt: now } });
    await appendMessage(api.db.prisma, waiting, { role: 'user', content: [{ type: 'text', text: 'hello?' }], queueStatus: 'queued' }, now);
    await api.db.prisma.session.update({ where: { id: waiting }, data: { status: 'pending' } });
    const resent: string[] = [];
    const resend = async (sessionId: string) => resent.push(sessionId);

    // Within the grace period nothing happens: the worker may still be alive.
    expect(await reapStuckTurns({ db: api.db.prisma, clock: systemClock }, resend)).toEqual({ ended: 0, resent: 0 });
    const later = { now: () => new Date(now.getTime() + STUCK_AFTER_MS + 1000) };
    const reaped = await reapStuckTurns({ db: api.db.prisma, clock: later }, resend);
    expect(reaped.ended).toBeGreaterThanOrEqual(1);
    expect(resent).toContain(waiting);
    expect(await session(stuck)).toMatchObject({ status: 'idle' });
    expect((await history(stuck)).at(-1)).toMatchObject({ role: 'assistant', isError: true, content: [{ type: 'text', text: STOPPED_TURN }] });
    // The re-sent job runs the waiting message.
    model.enqueue({ text: 'Here now.' });
    await api.queue.send(sessionTurnJob, { sessionId: waiting });
    await until(waiting, 'idle');
    expect((await history(waiting)).at(-1)).toMatchObject({ content: [{ type: 'text', text: 'Here now.' }] });
  });
});
