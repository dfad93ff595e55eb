import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compose } from '../../src/compose.ts';
import { loadConfig } from '../../src/config.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { newId } from '../../src/lib/ids.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { purgeExpiredSessions } from '../../src/modules/sessions/jobs.ts';
import { knownModel } from '../../src/agent/models.ts';
import { appendMessage, chargeSession, setSessionStatus, takeQueuedMessages } from '../../src/modules/sessions/store.ts';
import { DEFAULT_TURN_LIMITS } from '../../src/modules/sessions/turn-admission.ts';
import { ALLOW_LOOPBACK, JWT_SECRET, startTestApi, type TestApi } from '../support/api.ts';
import { writeModelsFile } from '../support/models-file.ts';
import { isRoot, sshdMissing, startSshd, TEST_USER, type TestSshd } from '../support/sshd.ts';
import { BACKENDS } from '../support/test-db.ts';
import { skipWithout } from '../support/parts.ts';

const missing = sshdMissing();
const skip = skipWithout('the sessions e2e tests', missing);

Object.assign(
  process.env,
  writeModelsFile([
    { id: 'test-model', provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: 'TEST_MODEL_KEY', pricing: { inputPerMTok: 1 } },
    { id: 'other-model', provider: 'anthropic', baseUrl: 'http://127.0.0.1:9', apiKeyEnv: 'OTHER_KEY' },
  ]).env,
);

describe('knownModel', () => {
  it('knows file models and the organization custom models, nothing else', () => {
    expect(knownModel('test-model')).toMatchObject({ source: 'file', provider: 'openai-compatible', apiKeyEnv: 'TEST_MODEL_KEY' });
    expect(knownModel('nope')).toBeUndefined();
    const enterpriseSettings = { customModels: [{ id: 'mine', model: 'llama', baseUrl: 'http://x', provider: 'generic-chat-completion-api' }] };
    expect(knownModel('custom:mine', { enterpriseSettings })).toMatchObject({ source: 'custom', upstreamModel: 'llama' });
    expect(knownModel('custom:theirs', { enterpriseSettings })).toBeUndefined();
    expect(knownModel('custom:mine')).toBeUndefined();
  });
});

describe.skipIf(skip).each(BACKENDS)('sessions API on %s', (backend) => {
  let api: TestApi;
  let sshd: TestSshd;
  let computerId: string;
  let workDir: string;
  let user: string;
  const home = () => execFileSync('sh', ['-c', `getent passwd ${sshd.username} | cut -d: -f6`], { encoding: 'utf8' }).trim();

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    [api, sshd] = await Promise.all([startTestApi(backend, { env: ALLOW_LOOPBACK }), startSshd()]);
    user = api.acme.members.user.apiKey;
    const key = await api.call('GET', '/api/v0/computers/ssh-public-key', { as: user });
    sshd.authorizeKey(key.body.publicKey);
    const res = await api.call('POST', '/api/v0/computers', {
      as: user,
      body: { name: 'sessions-1', provider: 'byom', remoteUser: sshd.username, connection: { host: sshd.host, port: sshd.port } },
    });
    expect(res.status).toBe(201);
    computerId = res.body.id;
    const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-cwd-'));
    fs.chmodSync(parent, 0o755);
    workDir = path.join(parent, 'repo');
    fs.mkdirSync(workDir);
    fs.writeFileSync(path.join(workDir, 'README.md'), 'hi\n');
    if (isRoot) execFileSync('chown', ['-R', `${TEST_USER}:`, parent]);
  });
  afterAll(async () => {
    await api?.close();
    await sshd?.stop();
  });

  const create = (body: Record<string, unknown> = {}, as = user) =>
    api.call('POST', '/api/v0/sessions', { as, body: { computerId, cwd: workDir, sessionSettings: { model: 'test-model' }, ...body } });
  const newSession = async (body: Record<string, unknown> = {}) => {
    const res = await create(body);
    expect(res.status).toBe(201);
    return res.body.sessionId as string;
  };
  /** Turn jobs sent for a session; `begun`: only those whose message began the turn. */
  const turnJobs = async (sessionId: string, opts: { begun?: true } = {}) => {
    const rows = await api.db.prisma.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'sessions.turn' AND data->>'sessionId' = $1 AND ($2 = false OR data->>'begun' = 'true')`,
      sessionId,
      opts.begun === true,
    );
    return rows[0]!.n;
  };

  describe('create', () => {
    it('answers 201 with the session in the wire shape, idle, in the given cwd', async () => {
      const res = await create({ sessionSettings: { model: 'test-model', reasoningEffort: 'high', autonomyMode: 'auto-medium', tags: [{ name: 't1' }] } });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        sessionId: expect.stringMatching(/^sess_/),
        status: 'idle',
        messageCount: 0,
        computerId,
        cwd: workDir,
        serviceCredits: 0,
        sessionSettings: {
          model: 'test-model',
          reasoningEffort: 'high',
          interactionMode: 'auto',
          autonomyLevel: 'medium',
          autonomyMode: 'auto-medium',
          tags: [{ name: 't1' }],
          tokenUsage: { inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0, serviceCredits: 0 },
          inclusiveTokenUsage: { inputTokens: 0 },
          childInclusiveTokenUsageBySessionId: {},
        },
      });
      expect(typeof res.body.createdAt).toBe('number');
      const stored = await api.db.prisma.session.findUniqueOrThrow({ where: { id: res.body.sessionId } });
      expect(stored).toMatchObject({ ownerKind: 'human', ownerId: api.acme.members.user.userId, organizationId: api.acme.id });
      expect(stored.settings).not.toHaveProperty('autonomyMode');
    });

    it('maps interactionMode + autonomyLevel to the deprecated autonomyMode', async () => {
      const spec = await create({ sessionSettings: { model: 'test-model', interactionMode: 'spec' } });
      expect(spec.body.sessionSettings.autonomyMode).toBe('spec');
      const normal = await create({ sessionSettings: { model: 'test-model', autonomyMode: 'normal' } });
      expect(normal.body.sessionSettings).toMatchObject({ interactionMode: 'auto', autonomyLevel: 'off', autonomyMode: 'normal' });
      const mission = await create({ sessionSettings: { model: 'test-model', interactionMode: 'mission', autonomyLevel: 'high' } });
      expect(mission.body.sessionSettings).not.toHaveProperty('autonomyMode');
    });

    it("defaults cwd to the remote user's home directory", async () => {
      const res = await api.call('POST', '/api/v0/sessions', { as: user, body: { computerId, sessionSettings: { model: 'test-model' } } });
      expect(res.status).toBe(201);
      expect(res.body.cwd).toBe(home());
    });

    it('answers 400 with a structured error naming cwd when it does not exist or is a file', async () => {
      const before = await api.db.prisma.session.count();
      const gone = await create({ cwd: '/definitely/not/here' });
      expect(gone.status).toBe(400);
      expect(gone.body.detail).toContain('/definitely/not/here');
      expect(gone.body.metadata).toMatchObject({ cwd: '/definitely/not/here', errors: [{ field: 'cwd', message: 'does not exist' }] });
      const file = await create({ cwd: path.join(workDir, 'README.md') });
      expect(file.status).toBe(400);
      expect(file.body.metadata.errors[0]).toEqual({ field: 'cwd', message: 'is not a directory' });
      const relative = await create({ cwd: 'repo' });
      expect(relative.status).toBe(400);
      expect(relative.body.detail).toMatch(/cwd must be an absolute path/);
      expect(await api.db.prisma.session.count()).toBe(before);
    });

    it('answers 400 for an unknown model and bad settings; a session naming no model gets the default (#34)', async () => {
      const unknown = await create({ sessionSettings: { model: 'gpt-nope' } });
      expect(unknown.status).toBe(400);
      expect(unknown.body.detail).toMatch(/"gpt-nope" is not a known model/);
      const none = await create({ sessionSettings: {} });
      expect(none.status).toBe(201);
      expect(none.body.sessionSettings.model).toBe('test-model');
      const bad = await create({ sessionSettings: { model: 'test-model', reasoningEffort: 'extreme' } });
      expect(bad.status).toBe(400);
      expect(bad.body.detail).toMatch(/sessionSettings.reasoningEffort/);
      const noComputer = await api.call('POST', '/api/v0/sessions', { as: user, body: { sessionSettings: { model: 'test-model' } } });
      expect(noComputer.status).toBe(400);
      expect(noComputer.body.detail).toMatch(/computerId/);
    });

    it('accepts the organization custom:<name> models from the enterprise controls', async () => {
      const put = await api.call('PUT', '/api/v0/organization/enterprise-controls', {
        as: api.acme.members.owner.apiKey,
        body: {
          settings: { customModels: [{ id: 'house-llm', model: 'llama-3', baseUrl: 'http://127.0.0.1:9/v1', provider: 'generic-chat-completion-api' }] },
        },
      });
      expect(put.status).toBe(200);
      expect((await create({ sessionSettings: { model: 'custom:house-llm' } })).status).toBe(201);
      expect((await create({ sessionSettings: { model: 'custom:other' } })).status).toBe(400);
      expect(knownModel('custom:house-llm')).toBeUndefined();
    });

    it("answers 400 naming the computer for an unknown, another organization's, unreachable or inactive computer", async () => {
      const unknown = await create({ computerId: 'cmp_unknown' });
      expect(unknown.status).toBe(400);
      expect(unknown.body).toMatchObject({
        detail: 'computerId cmp_unknown: no such computer in this organization',
        metadata: { errors: [{ field: 'computerId', message: 'no such computer in this organization' }] },
      });
      const foreign = await create({ computerId }, api.globex.members.owner.apiKey);
      expect(foreign.status).toBe(400);
      expect(foreign.body.detail).toBe(`computerId ${computerId}: no such computer in this organization`);
      const sessionsBefore = await api.db.prisma.session.count();
      const port = (await api.db.prisma.computer.findUniqueOrThrow({ where: { id: computerId } })).sshPort;
      await api.db.prisma.computer.update({ where: { id: computerId }, data: { sshPort: 9 } });
      try {
        const unreachable = await create();
        expect(unreachable.status).toBe(400);
        expect(unreachable.body.detail).toMatch(new RegExp(`^computerId ${computerId}: Computer "sessions-1" cannot be reached: `));
        expect(await api.db.prisma.session.count()).toBe(sessionsBefore);
      } finally {
        await api.db.prisma.computer.update({ where: { id: computerId }, data: { sshPort: port } });
      }
      await api.db.prisma.computer.update({ where: { id: computerId }, data: { status: 'error' } });
      try {
        const res = await create();
        expect(res.status).toBe(400);
        expect(res.body.detail).toMatch(/is error, not active/);
      } finally {
        await api.db.prisma.computer.update({ where: { id: computerId }, data: { status: 'active' } });
      }
    });

    it("accepts the name of one of the caller's own computers as computerId and stores the id (#34)", async () => {
      const byName = await create({ computerId: 'sessions-1' });
      expect(byName.status, byName.body?.detail).toBe(201);
      expect(byName.body.computerId).toBe(computerId);
      // Another member's computer is reached by neither its name nor its id.
      const other = await create({ computerId: 'sessions-1' }, api.acme.members.manager.apiKey);
      expect(other.status).toBe(400);
      expect(other.body.detail).toBe('computerId sessions-1: no such computer in this organization');
    });

    it("answers 429 when the user's concurrent sessions reach the limit", async () => {
      const limit = loadConfig({}).sessions.maxConcurrentSessions;
      const owner = { ownerKind: 'service', ownerId: api.acme.serviceAccount.id };
      const ids = Array.from({ length: limit }, () => newId('sess'));
      await api.db.prisma.session.createMany({
        data: ids.map((id) => ({ id, organizationId: api.acme.id, ...owner, computerId, cwd: '/', status: 'running' as const })),
      });
      try {
        const res = await api.call('POST', '/api/v0/sessions', {
          as: api.acme.serviceAccount.apiKey,
          body: { computerId: 'cmp_any', sessionSettings: { model: 'test-model' } },
        });
        expect(res.status).toBe(429);
        expect(res.headers.get('retry-after')).toBe('30');
        expect(res.body.detail).toContain(`the limit is ${limit}`);
        // Another owner is not affected.
        expect((await create()).status).toBe(201);
        await api.db.prisma.session.update({ where: { id: ids[0]! }, data: { status: 'idle' } });
        const again = await api.call('POST', '/api/v0/sessions', {
          as: api.acme.serviceAccount.apiKey,
          body: { computerId: 'cmp_any', sessionSettings: { model: 'test-model' } },
        });
        // Under the limit again: the request goes on to its computer, which does not exist.
        expect(again.status).toBe(400);
        expect(again.body.detail).toBe('computerId cmp_any: no such computer in this organization');
      } finally {
        await api.db.prisma.session.deleteMany({ where: { id: { in: ids } } });
      }
    });
  });

  it('answers 403 to organizations AGENTPLANE_SESSIONS_ORGS does not select', async () => {
    const plane = await compose({
      config: loadConfig({ AGENTPLANE_JWT_SECRET: JWT_SECRET, AGENTPLANE_SESSIONS_ORGS: api.globex.id }),
      db: api.db,
      log: createLogger({ level: 'silent' }),
      overrides: { machines: api.machines, queue: api.queue },
    });
    const server = await plane.listen(0, '127.0.0.1');
    try {
      const get = (key: string) => fetch(`${server.url}/api/v0/sessions`, { headers: { authorization: `Bearer ${key}` } });
      const denied = await get(user);
      expect(denied.status).toBe(403);
      expect(await denied.json()).toEqual({ detail: 'Sessions are not enabled for this organization', status: 403, title: 'Forbidden' });
      expect((await get(api.globex.members.user.apiKey)).status).toBe(200);
    } finally {
      await plane.stop();
    }
  });

  it('answers 404 to another organization and to another member for every session endpoint', async () => {
    const id = await newSession();
    const msg = await api.call('POST', `/api/v0/sessions/${id}/messages`, { as: user, body: { text: 'hello' } });
    const calls: [string, string, unknown?][] = [
      ['GET', `/api/v0/sessions/${id}`],
      ['PATCH', `/api/v0/sessions/${id}`, { sessionSettings: { reasoningEffort: 'low' } }],
      ['DELETE', `/api/v0/sessions/${id}`],
      ['POST', `/api/v0/sessions/${id}/restore`],
      ['POST', `/api/v0/sessions/${id}/interrupt`],
      ['GET', `/api/v0/sessions/${id}/messages`],
      ['POST', `/api/v0/sessions/${id}/messages`, { text: 'hi' }],
      ['GET', `/api/v0/sessions/${id}/messages/${msg.body.messageId}`],
      ['POST', `/api/v0/sessions/${id}/git-ai/checkpoints`, { commitSha: 'abcdef1', checkpoints: [{ kind: 'AiAgent' }] }],
    ];
    for (const as of [api.globex.members.owner.apiKey, api.acme.members.manager.apiKey]) {
      for (const [method, p, body] of calls) {
        const res = await api.call(method, p, { as, body });
        expect(res.status, `${method} ${p}`).toBe(404);
        expect(res.body.detail).toBe(`Session ${id} not found`);
      }
      const list = await api.call('GET', '/api/v0/sessions', { as });
      expect(list.body.sessions.map((s: { sessionId: string }) => s.sessionId)).not.toContain(id);
    }
    const after = await api.db.prisma.session.findUniqueOrThrow({ where: { id } });
    expect(after).toMatchObject({ deletedAt: null, messageCount: 1 });
    expect(after.settings).not.toHaveProperty('reasoningEffort');
  });

  it("lists the caller's sessions newest first with limit and cursor", async () => {
    const as = api.acme.members.owner.apiKey;
    const key = await api.call('GET', '/api/v0/computers/ssh-public-key', { as });
    expect(key.status).toBe(200);
    const reg = await api.call('POST', '/api/v0/computers', {
      as,
      body: { name: 'owner-box', provider: 'byom', remoteUser: sshd.username, connection: { host: sshd.host, port: sshd.port } },
    });
    expect(reg.status).toBe(201);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await create({ computerId: reg.body.id }, as);
      expect(res.status).toBe(201);
      ids.push(res.body.sessionId);
    }
    const first = await api.call('GET', '/api/v0/sessions?limit=2', { as });
    expect(first.status).toBe(200);
    expect(first.body.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([ids[2], ids[1]]);
    expect(first.body.pagination).toEqual({ hasMore: true, nextCursor: expect.any(String) });
    const second = await api.call('GET', `/api/v0/sessions?limit=2&cursor=${first.body.pagination.nextCursor}`, { as });
    expect(second.body).toEqual({ sessions: [expect.objectContaining({ sessionId: ids[0] })], pagination: { hasMore: false, nextCursor: null } });
    const byComputer = await api.call('GET', `/api/v0/sessions?computerId=${computerId}`, { as });
    expect(byComputer.body.sessions).toEqual([]);
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'cursor=garbage']) {
      const bad = await api.call('GET', `/api/v0/sessions?${q}`, { as });
      expect(bad.status, q).toBe(400);
    }
  });

  describe('messages', () => {
    it('stores the message of an idle session taken by its turn, begun at once, and sends one turn job', async () => {
      const id = await newSession();
      const res = await api.call('POST', `/api/v0/sessions/${id}/messages`, {
        as: user,
        body: {
          text: 'Fix the failing test\nin src',
          images: [{ type: 'base64', data: 'iVBORw0KGgo=', mediaType: 'image/png' }],
          files: [{ type: 'text', mediaType: 'text/plain', data: 'notes', name: 'n.txt' }],
        },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ messageId: expect.stringMatching(/^msg_/), status: 'running' });
      const stored = await api.db.prisma.sessionMessage.findUniqueOrThrow({ where: { id: res.body.messageId } });
      expect(stored).toMatchObject({ role: 'user', queueStatus: 'consumed', computerId });
      expect(stored.content).toEqual([
        { type: 'text', text: 'Fix the failing test\nin src' },
        { type: 'image', source: { type: 'base64', data: 'iVBORw0KGgo=', mediaType: 'image/png' } },
        { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: 'notes', name: 'n.txt' } },
      ]);
      const session = await api.call('GET', `/api/v0/sessions/${id}`, { as: user });
      expect(session.body).toMatchObject({ status: 'running', messageCount: 1, title: 'Fix the failing test' });
      expect(await turnJobs(id)).toBe(1);
      expect(await turnJobs(id, { begun: true })).toBe(1);
    });

    it('queues a message sent while a turn runs for the next turn', async () => {
      const id = await newSession();
      const first = await api.call('POST', `/api/v0/sessions/${id}/messages`, { as: user, body: { text: 'one' } });
      expect(first.body.status).toBe('running');
      const now = new Date();
      expect(await takeQueuedMessages(api.db.prisma, id, now)).toEqual([]);
      const second = await api.call('POST', `/api/v0/sessions/${id}/messages`, { as: user, body: { text: 'two' } });
      expect(second.body.status).toBe('running');
      const queued = await api.db.prisma.sessionMessage.findMany({ where: { sessionId: id, queueStatus: 'queued' } });
      expect(queued.map((m) => m.id)).toEqual([second.body.messageId]);
      expect(await turnJobs(id)).toBe(2);
      // Only the first began its turn; the second's job takes it when that turn ends.
      expect(await turnJobs(id, { begun: true })).toBe(1);
      expect((await takeQueuedMessages(api.db.prisma, id, now)).map((m) => m.id)).toEqual([second.body.messageId]);
    });

    it("over its owner's running-turn limit, stores the message once to wait (pending); nothing of the refused start stays", async () => {
      const id = await newSession();
      const row = await api.db.prisma.session.findUniqueOrThrow({ where: { id } });
      const busy = Array.from({ length: DEFAULT_TURN_LIMITS.perOwner }, () => newId('ses'));
      const { organizationId, ownerKind, ownerId, computerId: onComputer, cwd } = row;
      await api.db.prisma.session.createMany({
        data: busy.map((b) => ({ id: b, organizationId, ownerKind, ownerId, computerId: onComputer, cwd, status: 'running' as const })),
      });
      try {
        const res = await api.call('POST', `/api/v0/sessions/${id}/messages`, { as: user, body: { text: 'wait your turn' } });
        expect(res.body).toEqual({ messageId: expect.stringMatching(/^msg_/), status: 'pending' });
        const messages = await api.db.prisma.sessionMessage.findMany({ where: { sessionId: id } });
        expect(messages.map((m) => [m.id, m.queueStatus])).toEqual([[res.body.messageId, 'queued']]);
        expect(await api.db.prisma.session.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'pending', messageCount: 1 });
        expect([await turnJobs(id), await turnJobs(id, { begun: true })]).toEqual([1, 0]);
        const events = await api.db.prisma.event.findMany({ where: { sessionId: id }, orderBy: { id: 'asc' } });
        expect(events.map((e) => [e.type, (e.data as { status?: string }).status])).toEqual([
          ['session.message.created', undefined],
          ['session.status', 'pending'],
        ]);
        const analytics = await api.db.prisma.analyticsEvent.findMany({ where: { sessionId: id } });
        expect(analytics.map((a) => a.kind).sort()).toEqual(['message', 'session_started']);
      } finally {
        await api.db.prisma.session.updateMany({ where: { id: { in: busy } }, data: { status: 'idle' } });
      }
    });

    it('answers 504 when waitForCompletion runs out, keeping the message (the turn continues)', async () => {
      const id = await newSession();
      const started = Date.now();
      const res = await api.call('POST', `/api/v0/sessions/${id}/messages`, {
        as: user,
        body: { text: 'slow', waitForCompletion: true, waitTimeoutMs: 400 },
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
      expect(res.status).toBe(504);
      expect(res.body).toMatchObject({ status: 504, title: 'Gateway Timeout', metadata: { status: 'running', waitTimeoutMs: 400 } });
      expect(res.body.detail).toMatch(/did not finish within waitTimeoutMs=400; the turn continues/);
      const stored = await api.db.prisma.sessionMessage.findUniqueOrThrow({ where: { id: res.body.metadata.messageId } });
      expect(stored.queueStatus).toBe('consumed');
      expect((await api.call('GET', `/api/v0/sessions/${id}`, { as: user })).body.status).toBe('running');
    });

    it('answers when the turn ends with waitForCompletion', async () => {
      const id = await newSession();
      const pending = api.call('POST', `/api/v0/sessions/${id}/messages`, { as: user, body: { text: 'quick', waitForCompletion: true } });
      let moved = false;
      for (let i = 0; i < 100 && !moved; i++) {
        moved = await setSessionStatus(api.db.prisma, id, 'running', 'idle', new Date());
        if (!moved) await new Promise((r) => setTimeout(r, 50));
      }
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ messageId: expect.any(String), status: 'idle' });
    });

    it('refuses bad message bodies with 400 and a detail', async () => {
      const id = await newSession();
      const cases: [unknown, RegExp][] = [
        [{}, /text is required/],
        [{ text: '' }, /text must not be empty/],
        [{ text: 'x', images: [{ type: 'base64', data: 'AAAA', mediaType: 'image/bmp' }] }, /mediaType must be one of/],
        [{ text: 'x', files: [{ type: 'base64', mediaType: 'text/plain', data: 'AAAA' }] }, /application\/pdf/],
        [{ text: 'x', waitTimeoutMs: 0 }, /waitTimeoutMs must be at least 1/],
        [{ text: 'x', waitTimeoutMs: 600_001 }, /waitTimeoutMs must be at most 600000/],
        [{ text: 'x', computerId: 'cmp_nope' }, /Computer cmp_nope not found/],
        [{ text: 'x', surprise: true }, /surprise/],
      ];
      for (const [body, detail] of cases) {
        const res = await api.call('POST', `/api/v0/sessions/${id}/messages`, { as: user, body });
        expect([400, 404], JSON.stringify(body)).toContain(res.status);
        expect(res.body.detail).toMatch(detail);
      }
      expect(await api.db.prisma.sessionMessage.count({ where: { sessionId: id } })).toBe(0);
    });

    it('lists newest first with role filter and cursor, gets one, and round-trips the seven content kinds', async () => {
      const id = await newSession();
      const now = new Date();
      const user1 = await appendMessage(api.db.prisma, id, { role: 'user', content: [{ type: 'text', text: 'go' }], queueStatus: 'consumed' }, now);
      const assistant = await appendMessage(
        api.db.prisma,
        id,
        {
          role: 'assistant',
          modelId: 'test-model',
          reasoningEffort: 'high',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig', signatureProvider: 'anthropic' },
            { type: 'redacted_thinking', data: 'xx' },
            { type: 'text', text: 'running it' },
            { type: 'tool_use', id: 'tu_1', name: 'shell', input: { command: 'ls' } },
          ],
          extra: { openaiPhase: null, visibility: 'both' },
        },
        now,
      );
      const tool = await appendMessage(
        api.db.prisma,
        id,
        {
          role: 'tool',
          isError: true,
          content: [
            { type: 'tool_result', toolUseId: 'tu_1', content: [{ type: 'text', text: 'boom' }], isError: true },
            { type: 'image', source: { type: 'base64', data: 'AAAA', mediaType: 'image/png' } },
            { type: 'document', source: { type: 'base64', mediaType: 'application/pdf', data: 'AAAA' } },
          ],
        },
        now,
      );
      const all = await api.call('GET', `/api/v0/sessions/${id}/messages?limit=2`, { as: user });
      expect(all.status).toBe(200);
      expect(all.body.messages.map((m: { id: string }) => m.id)).toEqual([tool.id, assistant.id]);
      expect(all.body.messages[1]).toMatchObject({
        role: 'assistant',
        modelId: 'test-model',
        reasoningEffort: 'high',
        openaiPhase: null,
        visibility: 'both',
        content: [
          { type: 'thinking', signature: 'sig', signatureProvider: 'anthropic' },
          { type: 'redacted_thinking' },
          { type: 'text' },
          { type: 'tool_use', id: 'tu_1', input: { command: 'ls' } },
        ],
      });
      expect(all.body.messages[0]).toMatchObject({
        isError: true,
        content: [{ type: 'tool_result', toolUseId: 'tu_1' }, { type: 'image' }, { type: 'document' }],
      });
      expect(all.body.pagination.hasMore).toBe(true);
      const rest = await api.call('GET', `/api/v0/sessions/${id}/messages?limit=2&cursor=${all.body.pagination.nextCursor}`, { as: user });
      expect(rest.body).toEqual({ messages: [expect.objectContaining({ id: user1.id })], pagination: { hasMore: false, nextCursor: null } });
      const tools = await api.call('GET', `/api/v0/sessions/${id}/messages?role=tool`, { as: user });
      expect(tools.body.messages.map((m: { id: string }) => m.id)).toEqual([tool.id]);
      expect((await api.call('GET', `/api/v0/sessions/${id}/messages?role=robot`, { as: user })).status).toBe(400);
      const one = await api.call('GET', `/api/v0/sessions/${id}/messages/${assistant.id}`, { as: user });
      expect(one.status).toBe(200);
      expect(one.body.id).toBe(assistant.id);
      const other = await newSession();
      expect((await api.call('GET', `/api/v0/sessions/${other}/messages/${assistant.id}`, { as: user })).status).toBe(404);
      const wrongComputer = await api.call('GET', `/api/v0/sessions/${id}/messages?computerId=cmp_else`, { as: user });
      expect(wrongComputer.status).toBe(400);
      expect(wrongComputer.body.detail).toContain(`runs on computer ${computerId}`);
      expect((await api.call('GET', `/api/v0/sessions/${id}?computerId=${computerId}`, { as: user })).status).toBe(200);
    });
  });

  it('interrupt is idempotent when idle and sets the flag the runtime reads while a turn runs', async () => {
    const id = await newSession();
    const flagged = async () => (await api.db.prisma.session.findUniqueOrThrow({ where: { id } })).interruptRequestedAt !== null;
    const idle = await api.call('POST', `/api/v0/sessions/${id}/interrupt`, { as: user });
    expect(idle).toMatchObject({ status: 200, body: { status: 'idle' } });
    expect(await flagged()).toBe(false);
    await api.call('POST', `/api/v0/sessions/${id}/messages`, { as: user, body: { text: 'go' } });
    const res = await api.call('POST', `/api/v0/sessions/${id}/interrupt`, { as: user });
    expect(res.body).toEqual({ status: 'running' });
    expect(await flagged()).toBe(true);
    // A flag the ended turn never read does not interrupt the next turn.
    expect(await setSessionStatus(api.db.prisma, id, 'running', 'idle', new Date())).toBe(true);
    expect(await flagged()).toBe(true);
    expect((await api.call('POST', `/api/v0/sessions/${id}/messages`, { as: user, body: { text: 'again' } })).body.status).toBe('running');
    expect(await flagged()).toBe(false);
  });

  it('PATCH changes model, reasoning effort, tags, tool ids and archive', async () => {
    const id = await newSession({ sessionSettings: { model: 'test-model', autonomyLevel: 'low', interactionMode: 'auto' } });
    const patch = (sessionSettings: unknown) => api.call('PATCH', `/api/v0/sessions/${id}`, { as: user, body: { sessionSettings } });
    const res = await patch({
      model: 'other-model',
      reasoningEffort: 'xhigh',
      tags: [{ name: 'ci', metadata: { pr: '7' } }],
      enabledToolIds: ['web'],
      disabledToolIds: ['shell'],
      archivedAt: '2026-01-02T03:04:05.000Z',
      tokenUsage: { inputTokens: 5 },
    });
    expect(res.status).toBe(200);
    expect(res.body.sessionSettings).toMatchObject({
      model: 'other-model',
      reasoningEffort: 'xhigh',
      autonomyLevel: 'low',
      autonomyMode: 'auto-low',
      tags: [{ name: 'ci', metadata: { pr: '7' } }],
      enabledToolIds: ['web'],
      disabledToolIds: ['shell'],
      archivedAt: '2026-01-02T03:04:05.000Z',
      tokenUsage: { inputTokens: 0 },
    });
    const unarchived = await patch({ archivedAt: null, autonomyMode: 'auto-high' });
    expect(unarchived.body.sessionSettings).not.toHaveProperty('archivedAt');
    expect(unarchived.body.sessionSettings).toMatchObject({ model: 'other-model', autonomyLevel: 'high', autonomyMode: 'auto-high' });
    const unknown = await patch({ model: 'nope' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toMatch(/"nope" is not a known model/);
    expect((await patch({ tags: [{ name: '' }] })).status).toBe(400);
    expect((await api.call('PATCH', `/api/v0/sessions/${id}`, { as: user, body: {} })).status).toBe(400);
  });

  it('soft-deletes, restores within the retention, and purges afterwards', async () => {
    const id = await newSession();
    await api.call('POST', `/api/v0/sessions/${id}/messages`, { as: user, body: { text: 'keep me' } });
    expect((await api.call('DELETE', `/api/v0/sessions/${id}`, { as: user })).status).toBe(204);
    expect((await api.call('GET', `/api/v0/sessions/${id}`, { as: user })).status).toBe(404);
    expect((await api.call('GET', `/api/v0/sessions/${id}/messages`, { as: user })).status).toBe(404);
    expect((await api.call('DELETE', `/api/v0/sessions/${id}`, { as: user })).status).toBe(404);
    const list = await api.call('GET', '/api/v0/sessions?limit=100', { as: user });
    expect(list.body.sessions.map((s: { sessionId: string }) => s.sessionId)).not.toContain(id);
    const stored = await api.db.prisma.session.findUniqueOrThrow({ where: { id } });
    expect(stored.purgeAfter!.getTime() - stored.deletedAt!.getTime()).toBe(loadConfig({}).sessions.retentionDays * 86_400_000);
    expect(stored.interruptRequestedAt).not.toBeNull();

    const restored = await api.call('POST', `/api/v0/sessions/${id}/restore`, { as: user });
    expect(restored.status).toBe(200);
    expect(restored.body).toMatchObject({ sessionId: id, messageCount: 1 });
    expect((await api.call('GET', `/api/v0/sessions/${id}/messages`, { as: user })).body.messages).toHaveLength(1);
    expect((await api.call('POST', `/api/v0/sessions/${id}/restore`, { as: user })).status).toBe(200);

    await api.call('DELETE', `/api/v0/sessions/${id}`, { as: user });
    const keep = await newSession();
    await api.call('DELETE', `/api/v0/sessions/${keep}`, { as: user });
    await api.db.prisma.session.update({ where: { id }, data: { purgeAfter: new Date(Date.now() - 1000) } });
    const late = await api.call('POST', `/api/v0/sessions/${id}/restore`, { as: user });
    expect(late.status).toBe(404);
    expect(late.body.detail).toMatch(/can no longer be restored/);
    expect(await purgeExpiredSessions({ db: api.db.prisma, clock: systemClock })).toBe(1);
    expect(await api.db.prisma.session.findUnique({ where: { id } })).toBeNull();
    expect(await api.db.prisma.sessionMessage.count({ where: { sessionId: id } })).toBe(0);
    expect(await api.db.prisma.session.findUnique({ where: { id: keep } })).not.toBeNull();
    const audits = await api.db.prisma.auditRecord.findMany({ where: { eventType: 'session_change', organizationId: api.acme.id } });
    expect(audits.map((a) => (a.payload as { action: string }).action)).toEqual(expect.arrayContaining(['deleted', 'restored']));
  });

  it('adds usage to the session and up the parent chain, shown on detail and list', async () => {
    const parent = await newSession();
    const child = newId('sess');
    const grandchild = newId('sess');
    const owner = { organizationId: api.acme.id, ownerKind: 'human', ownerId: api.acme.members.user.userId, computerId, cwd: workDir };
    await api.db.prisma.session.create({ data: { id: child, parentSessionId: parent, ...owner } });
    await api.db.prisma.session.create({ data: { id: grandchild, parentSessionId: child, ...owner } });
    // Two calls' usage and the active time in one charge; each call is its own usage event.
    expect(
      await chargeSession(api.db.prisma, parent, {
        usage: [
          { inputTokens: 60, outputTokens: 10, serviceCredits: 1 },
          { inputTokens: 40, serviceCredits: 0.5 },
        ],
        activeMs: 700,
      }),
    ).toBe('idle');
    const usageEvents = await api.db.prisma.event.findMany({ where: { sessionId: parent, type: 'session.usage' }, orderBy: { id: 'asc' } });
    expect(usageEvents.map((e) => e.data)).toEqual([
      { usage: { inputTokens: 60, outputTokens: 10, serviceCredits: 1 } },
      { usage: { inputTokens: 40, serviceCredits: 0.5 } },
    ]);
    await chargeSession(api.db.prisma, child, { usage: [{ inputTokens: 20, cacheReadTokens: 5, serviceCredits: 0.25 }] });
    await chargeSession(api.db.prisma, grandchild, { usage: [{ thinkingTokens: 3, serviceCredits: 0.25 }] });
    const res = await api.call('GET', `/api/v0/sessions/${parent}`, { as: user });
    expect(res.body.serviceCredits).toBe(2);
    expect(res.body.sessionSettings).toMatchObject({
      assistantActiveTimeMs: 700,
      tokenUsage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, serviceCredits: 1.5 },
      inclusiveTokenUsage: { inputTokens: 120, outputTokens: 10, cacheReadTokens: 5, thinkingTokens: 3, serviceCredits: 2 },
      childInclusiveTokenUsageBySessionId: { [child]: { inputTokens: 20, cacheReadTokens: 5, thinkingTokens: 3, serviceCredits: 0.5 } },
    });
    const childView = await api.call('GET', `/api/v0/sessions/${child}`, { as: user });
    expect(childView.body).toMatchObject({ parent_session_id: parent, serviceCredits: 0.5 });
    const list = await api.call('GET', '/api/v0/sessions?limit=100', { as: user });
    const ids = list.body.sessions.map((s: { sessionId: string }) => s.sessionId);
    expect(ids).toContain(parent);
    expect(ids).not.toContain(child);
    expect(list.body.sessions.find((s: { sessionId: string }) => s.sessionId === parent).serviceCredits).toBe(2);
  });

  describe('git-ai checkpoints', () => {
    const diff = 'diff --git a/src/new.ts b/src/new.ts\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.ts\n@@ -0,0 +1 @@\n+x\n';
    const body = (commitSha: string) => ({
      baseSha: 'a'.repeat(40),
      branch: 'main',
      isDefaultBranch: true,
      commitSha,
      repoUrl: 'https://example.com/r.git',
      repoName: 'r',
      agentVersion: '1.0.0',
      checkpoints: [
        {
          kind: 'AiAgent',
          diff,
          author: 'agent',
          timestamp: 1_760_000_000_000,
          api_version: 'v1',
          git_ai_version: '0.1',
          entries: [
            {
              file: 'src/new.ts',
              blob_sha: 'b1',
              attributions: [{ start: 0, end: 1, author_id: 'a1', ts: 1 }],
              line_attributions: [{ start_line: 1, end_line: 1, author_id: 'a1', overrode: null }],
            },
            { file: 'app.py', blob_sha: 'b2', attributions: [], line_attributions: [] },
          ],
          agent_id: { tool: 'agentplane', id: 'x', model: 'test-model' },
          agent_metadata: { transcript_path: '/t', settings_path: '/s', tool_name: 'edit' },
          line_stats: { additions: 12, deletions: 3, additions_sloc: 10, deletions_sloc: 2 },
        },
        { kind: 'Human', entries: [], line_stats: { additions: 1, deletions: 0 } },
      ],
    });

    it('stores the checkpoints, answers 201 with their ids and feeds productivity analytics once per commit', async () => {
      const id = await newSession();
      const sha = 'c'.repeat(40);
      const res = await api.call('POST', `/api/v0/sessions/${id}/git-ai/checkpoints`, { as: user, body: body(sha) });
      expect(res.status).toBe(201);
      expect(res.body.checkpointIds).toHaveLength(2);
      const rows = await api.db.prisma.gitAiCheckpoint.findMany({ where: { sessionId: id }, orderBy: { kind: 'asc' } });
      expect(rows.map((r) => [r.kind, r.additions, r.deletions, r.additionsSloc, r.deletionsSloc])).toEqual([
        ['AiAgent', 12, 3, 10, 2],
        ['Human', 1, 0, 0, 0],
      ]);
      expect(rows[0]).toMatchObject({ commitSha: sha, branch: 'main', isDefaultBranch: true, timestampMs: 1_760_000_000_000n });
      expect((rows[0]!.body as { entries: unknown[] }).entries).toHaveLength(2);
      const events = () =>
        api.db.prisma.$queryRawUnsafe<{ kind: string; extension: string | null; language: string | null }[]>(
          `SELECT kind, extension, language FROM analytics_events WHERE session_id = $1 AND kind IN ('git_commit','file_created','file_edited') ORDER BY kind, extension`,
          id,
        );
      expect(await events()).toEqual([
        { kind: 'file_created', extension: 'ts', language: 'TypeScript' },
        { kind: 'file_edited', extension: 'py', language: 'Python' },
        { kind: 'git_commit', extension: null, language: null },
      ]);
      const again = await api.call('POST', `/api/v0/sessions/${id}/git-ai/checkpoints`, { as: user, body: body(sha) });
      expect(again.status).toBe(201);
      expect((await events()).filter((e) => e.kind === 'git_commit')).toHaveLength(1);
    });

    it('refuses bad bodies with 400 naming the field, storing nothing', async () => {
      const id = await newSession();
      const cases: [unknown, RegExp][] = [
        [{ checkpoints: [{ kind: 'AiAgent' }] }, /commitSha/],
        [{ commitSha: 'not-hex', checkpoints: [{ kind: 'AiAgent' }] }, /commitSha must be a hex commit id/],
        [{ commitSha: 'abcdef1', checkpoints: [] }, /at least one checkpoint/],
        [
          { commitSha: 'abcdef1', checkpoints: [{ kind: 'AiAgent', line_stats: { additions: -1, deletions: 0 } }] },
          /line_stats.additions must not be negative/,
        ],
        [{ commitSha: 'abcdef1', checkpoints: [{ diff: 'x' }] }, /checkpoints.0.kind/],
      ];
      for (const [b, detail] of cases) {
        const res = await api.call('POST', `/api/v0/sessions/${id}/git-ai/checkpoints`, { as: user, body: b });
        expect(res.status, JSON.stringify(b)).toBe(400);
        expect(res.body.detail).toMatch(detail);
      }
      expect(await api.db.prisma.gitAiCheckpoint.count({ where: { sessionId: id } })).toBe(0);
    });
  });
});
