import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_RESULTS } from '../../src/modules/sessions/approvals.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { seedDataDir } from '../support/pglite-template.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { BACKENDS } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

/** Short enough to wait out in the expiry test, long enough that the other tests answer well inside it. */
const TIMEOUT_SECONDS = 6;

/**
 * Approvals (#34): a turn whose tool call needs more autonomy than the session has pauses (status
 * pending, pendingApprovals), is answered over HTTP (by a second replica on the same PostgreSQL),
 * and resumes on a worker; denials, expiry, interrupts and who may answer.
 */
describe.skipIf(skipMachineTests || !BACKENDS.includes('postgres'))('approvals on PostgreSQL, two replicas', () => {
  let api: TestApi;
  let replica: { url: string; close(): Promise<void> };
  let machine: TestMachine;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let computerId: string;
  let key: string;

  beforeAll(async () => {
    [machine, model] = await Promise.all([startMachine(), startModelServer()]);
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    Object.assign(process.env, models.env);
    api = await startTestApi('postgres', { worker: true, env: { ...ALLOW_LOOPBACK, AGENTPLANE_APPROVAL_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS) } });
    replica = await api.replica();
    key = api.acme.members.user.apiKey;
    machine.sshd.authorizeKey((await api.call('GET', '/api/v0/computers/ssh-public-key', { as: key })).body.publicKey);
    const computer = await api.call('POST', '/api/v0/computers', {
      as: key,
      body: { name: 'approvals-box', provider: 'byom', remoteUser: machine.sshd.username, connection: { host: machine.sshd.host, port: machine.sshd.port } },
    });
    expect(computer.status, computer.body?.detail).toBe(201);
    computerId = computer.body.id;
  }, 120_000);

  afterAll(async () => {
    await replica?.close();
    await api?.close();
    models?.dispose();
    await model?.close();
    await machine?.stop();
  });

  const newSession = async (as = key, computer = computerId) => {
    const res = await api.call('POST', '/api/v0/sessions', {
      as,
      body: { computerId: computer, cwd: machine.scratch, sessionSettings: { model: 'coder', autonomyLevel: 'off' } },
    });
    expect(res.status, res.body?.detail).toBe(201);
    return res.body.sessionId as string;
  };
  const get = async (id: string) => (await api.call('GET', `/api/v0/sessions/${id}`, { as: key })).body;
  const paused = (id: string) =>
    waitFor(`session ${id} to wait for approval`, async () => {
      const s = await get(id);
      return s.status === 'pending' && s.pendingApprovals.length > 0 && s;
    });
  const idle = (id: string) => waitFor(`session ${id} to be idle`, async () => (await get(id)).status === 'idle', 30_000);
  const transcript = async (id: string) => [...(await api.call('GET', `/api/v0/sessions/${id}/messages?limit=100`, { as: key })).body.messages].reverse();
  /** POST .../approvals/{toolUseId} on the second replica. */
  const decide = async (id: string, toolUseId: string, body: unknown, as = key) => {
    const res = await fetch(`${replica.url}/api/v0/sessions/${id}/approvals/${toolUseId}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const say = (id: string, text: string) => api.call('POST', `/api/v0/sessions/${id}/messages`, { as: key, body: { text } });

  it('pauses, announces the request (stream, webhooks), and resumes on the other replica once approved', async () => {
    const hook = await api.call('POST', '/api/v0/webhooks', {
      as: api.acme.members.owner.apiKey,
      body: { url: 'http://127.0.0.1:9/hook', eventTypes: ['session.approval_requested'] },
    });
    expect(hook.status, hook.body?.detail).toBe(201);
    const id = await newSession();
    model.enqueue(
      { text: 'Listing it.', toolCalls: [{ id: 'call_ls', name: 'run_command', arguments: { command: 'echo approved-run' } }] },
      { text: 'It printed approved-run.' },
    );
    expect((await say(id, 'Run echo.')).status).toBe(200);

    const session = await paused(id);
    expect(session.pendingApprovals).toEqual([
      {
        toolUseId: 'call_ls',
        toolName: 'run_command',
        input: { command: 'echo approved-run' },
        requestedAt: expect.any(Number),
        expiresAt: expect.any(Number),
      },
    ]);
    const [pending] = session.pendingApprovals;
    expect(pending.expiresAt - pending.requestedAt).toBe(TIMEOUT_SECONDS * 1000);
    // Nothing ran yet: only the model's first call was made.
    expect(model.requests).toHaveLength(1);
    const event = await api.db.prisma.event.findFirst({ where: { sessionId: id, type: 'session.approval_requested' } });
    expect(event?.organizationId).toBe(api.acme.id);
    expect(event?.data).toMatchObject({ sessionId: id, pendingApprovals: [{ toolUseId: 'call_ls', toolName: 'run_command' }] });
    const deliveries = await api.call('GET', `/api/v0/webhooks/${hook.body.id}/deliveries`, { as: api.acme.members.owner.apiKey });
    expect(deliveries.body.deliveries.map((d: { eventType: string }) => d.eventType)).toContain('session.approval_requested');
    await api.call('DELETE', `/api/v0/webhooks/${hook.body.id}`, { as: api.acme.members.owner.apiKey });

    const approved = await decide(id, 'call_ls', { decision: 'approve' });
    expect(approved.status, approved.body?.detail).toBe(200);
    expect(approved.body).toMatchObject({ toolUseId: 'call_ls', toolName: 'run_command', status: 'approved', scope: 'once' });
    await idle(id);
    const messages = await transcript(id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[2].content[0]).toMatchObject({ toolUseId: 'call_ls', isError: false, content: expect.stringContaining('approved-run') });
    expect(messages[3].content).toEqual([{ type: 'text', text: 'It printed approved-run.' }]);
    expect((await get(id)).pendingApprovals).toEqual([]);
    expect((await decide(id, 'call_ls', { decision: 'deny' })).status).toBe(409);
    const audit = await api.db.prisma.auditRecord.findFirst({
      where: { organizationId: api.acme.id, eventType: 'session_change' },
      orderBy: { createdAt: 'desc' },
    });
    expect(audit?.payload).toMatchObject({ action: 'tool_call_approved', toolUseId: 'call_ls', scope: 'once' });
  });

  it('approves calls like it for the rest of the session, asks again for another, and denies it', async () => {
    const id = await newSession();
    const touch = `touch approved-file-${Date.now()}`;
    model.enqueue(
      { toolCalls: [{ id: 'call_a', name: 'run_command', arguments: { command: touch } }] },
      { toolCalls: [{ id: 'call_b', name: 'run_command', arguments: { command: `  ${touch}` } }] },
      { toolCalls: [{ id: 'call_c', name: 'run_command', arguments: { command: 'rm -rf ./*' } }] },
      { text: 'I will not delete anything.' },
    );
    await say(id, 'Touch the file twice, then clean up.');
    await paused(id);
    expect((await decide(id, 'call_a', { decision: 'approve', scope: 'session' })).status).toBe(200);
    // call_b is the same command line: it runs without asking; call_c is another and is asked about.
    const again = await waitFor('the second request', async () => {
      const s = await get(id);
      return s.pendingApprovals[0]?.toolUseId === 'call_c' && s;
    });
    expect(again.pendingApprovals).toHaveLength(1);
    const denied = await decide(id, 'call_c', { decision: 'deny' });
    expect(denied.body).toMatchObject({ status: 'denied', scope: 'once' });
    await idle(id);
    const results = (await transcript(id)).filter((m) => m.role === 'tool').map((m) => m.content[0]);
    expect(results.map((r) => [r.toolUseId, r.isError])).toEqual([
      ['call_a', false],
      ['call_b', false],
      ['call_c', true],
    ]);
    expect(results[2].content).toBe(APPROVAL_RESULTS.denied('run_command'));
    const rows = await api.db.prisma.sessionApproval.findMany({ where: { sessionId: id }, orderBy: { requestedAt: 'asc' } });
    expect(rows.map((r) => [r.toolUseId, r.status, r.scope])).toEqual([
      ['call_a', 'approved', 'session'],
      ['call_c', 'denied', 'once'],
    ]);
    expect(await machine.sh(`ls '${machine.scratch}'`)).toMatch(/approved-file-/);
  });

  it('asks about every gated call of a message at once and resumes once both are answered, at the same time on two replicas', async () => {
    const id = await newSession();
    model.enqueue(
      {
        toolCalls: [
          { id: 'call_w', name: 'write_file', arguments: { path: 'both.txt', content: 'both' } },
          { id: 'call_r', name: 'read_file', arguments: { path: 'both.txt' } },
          { id: 'call_c', name: 'run_command', arguments: { command: 'cat both.txt' } },
        ],
      },
      { text: 'Both ran.' },
    );
    await say(id, 'Write, read and cat.');
    const session = await paused(id);
    // The read needs no approval, but it waits with the message's other calls, so it still reads after the write.
    expect(session.pendingApprovals.map((a: { toolUseId: string }) => a.toolUseId)).toEqual(['call_w', 'call_c']);
    const [onPrimary, onReplica] = await Promise.all([
      api.call('POST', `/api/v0/sessions/${id}/approvals/call_w`, { as: key, body: { decision: 'approve' } }),
      decide(id, 'call_c', { decision: 'approve' }),
    ]);
    expect([onPrimary.status, onReplica.status]).toEqual([200, 200]);
    await idle(id);
    const results = (await transcript(id)).find((m) => m.role === 'tool').content;
    expect(results.map((r: { toolUseId: string; isError: boolean }) => [r.toolUseId, r.isError])).toEqual([
      ['call_w', false],
      ['call_r', false],
      ['call_c', false],
    ]);
    expect(results[1].content).toContain('both');
    expect(results[2].content).toContain('both');
  });

  it('refuses a bad decision with 400 and changes nothing', async () => {
    const id = await newSession();
    model.enqueue({ toolCalls: [{ id: 'call_bad', name: 'write_file', arguments: { path: 'x.txt', content: 'x' } }] }, { text: 'Left it.' });
    await say(id, 'Write x.');
    await paused(id);
    const bad = await decide(id, 'call_bad', { decision: 'maybe' });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/decision must be "approve" or "deny"/);
    expect((await decide(id, 'call_bad', { decision: 'approve', scope: 'forever' })).status).toBe(400);
    expect((await decide(id, 'call_nope', { decision: 'approve' })).status).toBe(404);
    expect((await get(id)).pendingApprovals.map((a: { toolUseId: string }) => a.toolUseId)).toEqual(['call_bad']);
    // An interrupt cancels the paused turn at once: nothing runs, the model is not called again.
    const calls = model.requests.length;
    const interrupted = await api.call('POST', `/api/v0/sessions/${id}/interrupt`, { as: key });
    expect(interrupted.body).toEqual({ status: 'idle' });
    const messages = await transcript(id);
    expect(messages.at(-1).content).toEqual([{ type: 'tool_result', toolUseId: 'call_bad', content: APPROVAL_RESULTS.cancelled('write_file'), isError: true }]);
    expect(model.requests).toHaveLength(calls);
    expect(await api.db.prisma.sessionApproval.findFirst({ where: { sessionId: id } })).toMatchObject({ status: 'cancelled' });
    expect((await decide(id, 'call_bad', { decision: 'approve' })).status).toBe(409);
    expect(await machine.sh(`ls '${machine.scratch}'`)).not.toMatch(/x\.txt/);
    model.reset();
  });

  it('expires an approval nobody answers and tells the model so', { timeout: 60_000 }, async () => {
    const id = await newSession();
    model.enqueue({ toolCalls: [{ id: 'call_late', name: 'run_command', arguments: { command: 'echo too-late' } }] }, { text: 'Nobody answered.' });
    await say(id, 'Run it.');
    await paused(id);
    await idle(id);
    const messages = await transcript(id);
    expect(messages.at(-2).content[0]).toEqual({
      type: 'tool_result',
      toolUseId: 'call_late',
      content: APPROVAL_RESULTS.expired('run_command', TIMEOUT_SECONDS * 1000),
      isError: true,
    });
    expect(APPROVAL_RESULTS.expired('run_command', TIMEOUT_SECONDS * 1000)).toContain(`${TIMEOUT_SECONDS} seconds`);
    const late = await decide(id, 'call_late', { decision: 'approve' });
    expect(late.status).toBe(409);
    expect(late.body.detail).toMatch(/already expired/);
  });

  it('lets the owner and, for a service account, managers answer: 403 for a plain member, 404 elsewhere', async () => {
    const sa = api.acme.serviceAccount.apiKey;
    const saComputer = await api.call('POST', '/api/v0/computers', {
      as: sa,
      body: { name: 'sa-box', provider: 'byom', remoteUser: machine.sshd.username, connection: { host: machine.sshd.host, port: machine.sshd.port } },
    });
    expect(saComputer.status, saComputer.body?.detail).toBe(201);
    const saSession = await newSession(sa, saComputer.body.id);
    const mine = await newSession();
    const body = { decision: 'approve' };
    expect((await decide(saSession, 'call_x', body, api.acme.members.user.apiKey)).status).toBe(403);
    // Managers and the service account itself get past access: there is simply no such request.
    for (const as of [api.acme.members.manager.apiKey, sa]) {
      const res = await decide(saSession, 'call_x', body, as);
      expect(res.status).toBe(404);
      expect(res.body.detail).toMatch(/no approval request for tool call call_x/);
    }
    // Another member's session, and any session from another organization: 404.
    for (const as of [api.acme.members.manager.apiKey, api.globex.members.owner.apiKey]) {
      const res = await decide(mine, 'call_x', body, as);
      expect(res.status).toBe(404);
      expect(res.body.detail).toMatch(/Session .* not found/);
    }
    expect((await decide(saSession, 'call_x', body, api.globex.members.owner.apiKey)).status).toBe(404);
  });

  it('answers the waiting calls a raised autonomy allows (audited as the change), leaves the others, and lists the waiting session', async () => {
    const id = await newSession();
    const file = `raised-${Date.now()}.txt`;
    model.enqueue(
      {
        toolCalls: [
          { id: 'call_write', name: 'write_file', arguments: { path: file, content: 'raised' } },
          { id: 'call_cat', name: 'run_command', arguments: { command: `cat ${file}` } },
        ],
      },
      { text: 'Wrote and read it.' },
    );
    await say(id, 'Write and cat.');
    await paused(id);
    // The list says the session waits for an approval, with the calls it waits on.
    const listed = (await api.call('GET', '/api/v0/sessions?limit=50', { as: key })).body.sessions.find((s: { sessionId: string }) => s.sessionId === id);
    expect(listed).toMatchObject({ status: 'pending', pendingApprovals: [{ toolUseId: 'call_write' }, { toolUseId: 'call_cat' }] });

    // low runs file writes, not commands: the write is answered by the change, the command still waits, nothing resumes.
    const low = await api.call('PATCH', `/api/v0/sessions/${id}`, { as: key, body: { sessionSettings: { autonomyLevel: 'low' } } });
    expect(low.status, low.body?.detail).toBe(200);
    expect(low.body).toMatchObject({ status: 'pending', sessionSettings: { autonomyLevel: 'low' } });
    expect(low.body.pendingApprovals.map((a: { toolUseId: string }) => a.toolUseId)).toEqual(['call_cat']);
    const rows = await api.db.prisma.sessionApproval.findMany({ where: { sessionId: id }, orderBy: { position: 'asc' } });
    expect(rows.map((r) => [r.toolUseId, r.status])).toEqual([
      ['call_write', 'approved'],
      ['call_cat', 'pending'],
    ]);
    const audit = await api.db.prisma.auditRecord.findMany({
      where: { organizationId: api.acme.id, eventType: 'session_change' },
      orderBy: { createdAt: 'desc' },
      take: 1,
    });
    expect(audit[0]?.payload).toMatchObject({ action: 'tool_call_approved', toolUseId: 'call_write', by: 'autonomy_change', autonomyLevel: 'low' });
    const resolved = await api.db.prisma.event.findFirst({ where: { sessionId: id, type: 'session.approval_resolved' } });
    expect(resolved?.data).toMatchObject({ toolUseId: 'call_write', status: 'approved', by: 'autonomy_change' });
    const callsBefore = model.requests.length;
    expect((await get(id)).status).toBe('pending');

    // medium runs commands too: the last call is answered, and the turn resumes and completes on its own.
    const medium = await fetch(`${replica.url}/api/v0/sessions/${id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sessionSettings: { autonomyLevel: 'medium' } }),
    });
    expect(medium.status).toBe(200);
    await idle(id);
    expect(model.requests.length).toBe(callsBefore + 1);
    const results = (await transcript(id)).find((m) => m.role === 'tool').content;
    expect(results.map((r: { toolUseId: string; isError: boolean }) => [r.toolUseId, r.isError])).toEqual([
      ['call_write', false],
      ['call_cat', false],
    ]);
    expect(results[1].content).toContain('raised');
    // A lower level answers nothing.
    const lowered = await api.call('PATCH', `/api/v0/sessions/${id}`, { as: key, body: { sessionSettings: { autonomyLevel: 'off' } } });
    expect(lowered.body).toMatchObject({ status: 'idle', pendingApprovals: [] });
  });

  it("enforces the organization's maxAutonomyLevel on create, PATCH and at run time", async () => {
    const owner = api.acme.members.owner.apiKey;
    const controls = (settings: unknown) => api.call('PUT', '/api/v0/organization/enterprise-controls', { as: owner, body: { settings } });
    // Created before the maximum is lowered: it asks for high.
    const before = await api.call('POST', '/api/v0/sessions', {
      as: key,
      body: { computerId, cwd: machine.scratch, sessionSettings: { model: 'coder', autonomyLevel: 'high' } },
    });
    expect(before.status, before.body?.detail).toBe(201);
    expect((await controls({ maxAutonomyLevel: 'low', sessionDefaultSettings: { autonomyLevel: 'high' } })).status).toBe(200);
    try {
      const count = () => api.db.prisma.session.count({ where: { organizationId: api.acme.id } });
      const sessions = await count();
      const create = (sessionSettings: unknown) =>
        api.call('POST', '/api/v0/sessions', { as: key, body: { computerId, cwd: machine.scratch, sessionSettings } });
      const high = await create({ model: 'coder', autonomyLevel: 'high' });
      expect(high.status).toBe(400);
      expect(high.body.detail).toBe(
        `sessionSettings.autonomyLevel "high" is above the organization's maxAutonomyLevel "low" (enterprise controls); use one of off, low`,
      );
      expect(high.body.metadata).toEqual({
        errors: [{ field: 'sessionSettings.autonomyLevel', message: 'above maxAutonomyLevel low' }],
        maxAutonomyLevel: 'low',
      });
      const mode = await create({ model: 'coder', autonomyMode: 'auto-medium' });
      expect(mode.status).toBe(400);
      expect(mode.body.metadata.errors[0].field).toBe('sessionSettings.autonomyMode');
      expect(await count()).toBe(sessions);
      // The organization's default above its own maximum is lowered to it, not refused.
      const defaulted = await create({ model: 'coder' });
      expect(defaulted.status, defaulted.body?.detail).toBe(201);
      expect(defaulted.body.sessionSettings.autonomyLevel).toBe('low');
      const id = defaulted.body.sessionId as string;
      const raise = await api.call('PATCH', `/api/v0/sessions/${id}`, {
        as: key,
        body: { sessionSettings: { autonomyLevel: 'medium', reasoningEffort: 'high' } },
      });
      expect(raise.status).toBe(400);
      expect(raise.body.detail).toMatch(/autonomyLevel "medium" is above the organization's maxAutonomyLevel "low"/);
      expect((await get(id)).sessionSettings).toMatchObject({ autonomyLevel: 'low' });
      expect((await get(id)).sessionSettings.reasoningEffort).toBeUndefined();
      expect((await api.call('PATCH', `/api/v0/sessions/${id}`, { as: key, body: { sessionSettings: { autonomyLevel: 'off' } } })).status).toBe(200);

      // The session set to high before runs at the maximum: its command waits for approval.
      model.enqueue({ toolCalls: [{ id: 'call_capped', name: 'run_command', arguments: { command: 'echo capped' } }] }, { text: 'Asked first.' });
      await say(before.body.sessionId, 'Run it.');
      const waiting = await paused(before.body.sessionId);
      expect(waiting.pendingApprovals.map((a: { toolUseId: string }) => a.toolUseId)).toEqual(['call_capped']);
      expect(waiting.sessionSettings.autonomyLevel).toBe('high');
      // A level at the maximum answers nothing a command needs; approving does.
      const capped = await api.call('PATCH', `/api/v0/sessions/${before.body.sessionId}`, { as: key, body: { sessionSettings: { autonomyLevel: 'low' } } });
      expect(capped.body.pendingApprovals.map((a: { toolUseId: string }) => a.toolUseId)).toEqual(['call_capped']);
      expect((await decide(before.body.sessionId, 'call_capped', { decision: 'approve' })).status).toBe(200);
      await idle(before.body.sessionId);
    } finally {
      expect((await controls({})).status).toBe(200);
    }
  });
});

/**
 * `agentplane serve` on the embedded database stopped while a turn waits for approval (SIGTERM,
 * then kill -9) and started again on the same data directory each time: nothing of the pause lived
 * in a process, and the approval answered by the third process resumes the turn to its end.
 */
describe.skipIf(skipMachineTests)('approvals across a control-plane restart', () => {
  let machine: TestMachine;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let server: ServerProcess | undefined;
  let env: Record<string, string>;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-approvals-'));

  beforeAll(async () => {
    [machine, model] = await Promise.all([startMachine(), startModelServer()]);
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    env = { ...models.env, ...ALLOW_LOOPBACK, AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_LOCAL_PROVIDER: 'false' };
    seedDataDir(dataDir);
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    models?.dispose();
    await model?.close();
    await machine?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps the pending call through SIGTERM and kill -9, and resumes when it is approved', { timeout: 120_000 }, async () => {
    server = await startServerProcess(env);
    const key = server.firstStartKey!;
    expect(key).toMatch(/^apk_/);
    const call = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${server!.url}${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
    };
    machine.sshd.authorizeKey((await call('GET', '/api/v0/computers/ssh-public-key')).body.publicKey);
    const computer = await call('POST', '/api/v0/computers', {
      name: 'restart-box',
      provider: 'byom',
      remoteUser: machine.sshd.username,
      connection: { host: machine.sshd.host, port: machine.sshd.port },
    });
    expect(computer.status, computer.body?.detail).toBe(201);
    // No model named: the models file's first is the default.
    const created = await call('POST', '/api/v0/sessions', { computerId: computer.body.id, cwd: machine.scratch });
    expect(created.status, created.body?.detail).toBe(201);
    expect(created.body.sessionSettings.model).toBe('coder');
    const id = created.body.sessionId as string;
    model.enqueue({ toolCalls: [{ id: 'call_r', name: 'run_command', arguments: { command: 'echo after-restart' } }] }, { text: 'Back and done.' });
    await call('POST', `/api/v0/sessions/${id}/messages`, { text: 'Run it.' });
    await waitFor('the pause', async () => (await call('GET', `/api/v0/sessions/${id}`)).body.pendingApprovals?.length === 1, 30_000);
    const stillWaiting = async () => {
      const session = (await call('GET', `/api/v0/sessions/${id}`)).body;
      expect(session.status).toBe('pending');
      expect(session.pendingApprovals.map((a: { toolUseId: string }) => a.toolUseId)).toEqual(['call_r']);
    };

    // A graceful stop does not wait for the approval (nothing holds a worker), and exits 0.
    expect(await server.stop('SIGTERM')).toBe(0);
    server = await startServerProcess(env);
    await stillWaiting();
    expect(await server.stop('SIGKILL')).toBeNull();
    server = await startServerProcess(env);
    await stillWaiting();
    expect(model.requests).toHaveLength(1);

    expect((await call('POST', `/api/v0/sessions/${id}/approvals/call_r`, { decision: 'approve' })).status).toBe(200);
    await waitFor('the resumed turn', async () => (await call('GET', `/api/v0/sessions/${id}`)).body.status === 'idle', 30_000, 100);
    const messages = [...(await call('GET', `/api/v0/sessions/${id}/messages?limit=100`)).body.messages].reverse();
    expect(messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[2].content[0]).toMatchObject({ toolUseId: 'call_r', isError: false, content: expect.stringContaining('after-restart') });
    expect(messages[3].content).toEqual([{ type: 'text', text: 'Back and done.' }]);
    expect(model.remaining()).toBe(0);
  });
});
