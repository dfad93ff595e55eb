import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../../src/auth/issue-api-key.ts';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { newId } from '../../src/lib/ids.ts';
import { createTestDatabase, postgresMissing } from '../support/databases.ts';
import { skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';
import { startModelServer, type ModelServer, type RecordedRequest } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { skipWithout } from '../support/parts.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Running-turn limits per organization and per owner, across real server processes on one
 * PostgreSQL: turns over a limit wait (pending) and start in their messages' order as slots free,
 * another organization's turn starts at once, managers see the queue; and a replica killed in the
 * middle of a burst loses no turn. Every turn runs one command that waits for its gate file on
 * the machine, so the test decides when each turn ends.
 */
describe.skipIf(skipMachineTests || skipWithout('the fairness tests on PostgreSQL', postgresMissing()))('turn limits and a replica killed mid-burst', () => {
  let machine: TestMachine;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let db: Database;
  let drop: () => Promise<void>;
  let env: Record<string, string>;
  const servers: ServerProcess[] = [];
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-fairness-'));
  /** API keys: acme's two members and its manager; globex's member. */
  const keys: Record<'u1' | 'u2' | 'manager' | 'other', string> = { u1: '', u2: '', manager: '', other: '' };
  const computers: Partial<Record<keyof typeof keys, string>> = {};

  /** The gate a turn waits for: named by its message's text. */
  const gate = (name: string) => `${machine.scratch}/gate-${name}`;
  const open = (name: string) => machine.sh(`touch '${gate(name)}'`);
  const userText = (request: RecordedRequest) => {
    const content = request.body.messages.find((m) => m.role === 'user')?.content;
    return typeof content === 'string' ? content : (content as { text?: string }[]).map((p) => p.text ?? '').join('');
  };

  const start = async (limits: Record<string, string>) => {
    const server = await startServerProcess({ ...env, ...limits, AGENTPLANE_DATA_DIR: path.join(dataDir, `server-${servers.length}`) });
    servers.push(server);
    return server;
  };
  const call = async (server: ServerProcess, as: string, method: string, p: string, body?: unknown) => {
    const res = await fetch(`${server.url}${p}`, {
      method,
      headers: { authorization: `Bearer ${as}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
  };
  /** A new session of `who` on their computer, with one message whose turn waits for gate `name`. */
  const post = async (server: ServerProcess, who: keyof typeof keys, name: string) => {
    const created = await call(server, keys[who], 'POST', '/api/v0/sessions', {
      computerId: computers[who],
      cwd: machine.scratch,
      sessionSettings: { model: 'coder', autonomyLevel: 'high' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const sent = await call(server, keys[who], 'POST', `/api/v0/sessions/${created.body.sessionId}/messages`, { text: name });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    answered.set(created.body.sessionId, sent.body.status);
    return created.body.sessionId as string;
  };
  /** The status each message's answer reported, by session. */
  const answered = new Map<string, string>();
  const status = async (id: string) => (await db.prisma.session.findUniqueOrThrow({ where: { id } })).status;
  const statuses = async (ids: Record<string, string>) =>
    Object.fromEntries(await Promise.all(Object.entries(ids).map(async ([name, id]) => [name, await status(id)] as const)));

  beforeAll(async () => {
    [machine, model] = await Promise.all([startMachine(), startModelServer()]);
    // First call: the command that waits for the turn's gate; after its result: the answer.
    model.respondWith((request) =>
      request.body.messages.at(-1)?.role === 'tool'
        ? { text: `done ${userText(request)}` }
        : { toolCalls: [{ name: 'run_command', arguments: { command: `while [ ! -e '${gate(userText(request))}' ]; do sleep 0.05; done` } }] },
    );
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    const created = await createTestDatabase();
    drop = created.drop;
    // Replicas share the encryption key, as a deployment's do.
    env = {
      ...models.env,
      DATABASE_URL: created.url,
      AGENTPLANE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      AGENTPLANE_EGRESS_ALLOW: '127.0.0.0/8',
      AGENTPLANE_LOCAL_PROVIDER: 'false',
    };
    db = await openDatabase({ databaseUrl: created.url, dataDir });
  });

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop('SIGKILL')));
    await db?.close();
    await drop?.();
    models?.dispose();
    await model?.close();
    await machine?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('queues turns over the organization and owner limits in order, lets another organization start at once, and shows managers the queue', {
    timeout: 180_000,
  }, async () => {
    const server = await start({ AGENTPLANE_TURNS_PER_ORGANIZATION: '3', AGENTPLANE_TURNS_PER_OWNER: '2' });
    const acme = await db.prisma.organization.findFirstOrThrow();
    const globex = await db.prisma.organization.create({ data: { id: newId('org'), name: 'globex' } });
    const member = async (organizationId: string, role: 'user' | 'manager') => {
      const user = await db.prisma.user.create({ data: { id: newId('usr'), email: `${newId('u')}@fairness.test` } });
      await db.prisma.membership.create({ data: { id: newId('mem'), organizationId, userId: user.id, role } });
      return (await issueApiKey(db.prisma, { organizationId, owner: { userId: user.id }, name: 'fairness', now: new Date() })).value;
    };
    keys.u1 = await member(acme.id, 'user');
    keys.u2 = await member(acme.id, 'user');
    keys.manager = await member(acme.id, 'manager');
    keys.other = await member(globex.id, 'user');
    // Each organization has its own key.
    for (const who of ['u1', 'other'] as const)
      machine.sshd.authorizeKey((await call(server, keys[who], 'GET', '/api/v0/computers/ssh-public-key')).body.publicKey);
    for (const who of ['u1', 'u2', 'other'] as const) {
      const res = await call(server, keys[who], 'POST', '/api/v0/computers', {
        name: `box-${who}`,
        provider: 'byom',
        remoteUser: machine.sshd.username,
        connection: { host: machine.sshd.host, port: machine.sshd.port },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      computers[who] = res.body.id;
    }

    // u1 fills its two slots; c waits on u1's limit; e takes the organization's third; f and d wait on it.
    const ids = {} as Record<'a' | 'b' | 'c' | 'd' | 'e' | 'f', string>;
    ids.a = await post(server, 'u1', 'a');
    ids.b = await post(server, 'u1', 'b');
    await waitFor('a and b running', async () => (await status(ids.a)) === 'running' && (await status(ids.b)) === 'running', 30_000);
    ids.c = await post(server, 'u1', 'c');
    ids.e = await post(server, 'u2', 'e');
    await waitFor('e running', async () => (await status(ids.e)) === 'running', 30_000);
    ids.f = await post(server, 'u2', 'f');
    ids.d = await post(server, 'u1', 'd');
    // Another organization's turn starts while acme's wait.
    const x = await post(server, 'other', 'x');
    await waitFor("globex's turn running", async () => (await status(x)) === 'running', 10_000);
    expect(await statuses(ids)).toEqual({ a: 'running', b: 'running', c: 'pending', e: 'running', f: 'pending', d: 'pending' });
    // Each message began its turn at once, or (its commit refused over a limit) was stored again, once, to wait.
    expect(Object.fromEntries(Object.entries(ids).map(([name, id]) => [name, answered.get(id)]))).toEqual({
      a: 'running',
      b: 'running',
      c: 'pending',
      e: 'running',
      f: 'pending',
      d: 'pending',
    });
    for (const id of [ids.c, ids.d, ids.f]) {
      expect(await db.prisma.sessionMessage.findMany({ where: { sessionId: id }, select: { queueStatus: true } })).toEqual([{ queueStatus: 'queued' }]);
      expect((await db.prisma.session.findUniqueOrThrow({ where: { id } })).messageCount).toBe(1);
    }

    const queue = await call(server, keys.manager, 'GET', '/api/v0/organization/turns');
    expect(queue.status).toBe(200);
    expect(queue.body.limits).toEqual({ perOrganization: 3, perOwner: 2 });
    expect({ running: queue.body.running, pending: queue.body.pending }).toEqual({ running: 3, pending: 3 });
    const byOwner = Object.fromEntries(
      queue.body.owners.map((o: { ownerId: string; running: number; pending: number }) => [o.ownerId, [o.running, o.pending]]),
    );
    expect(Object.values(byOwner).sort()).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect((await call(server, keys.u1, 'GET', '/api/v0/organization/turns')).status).toBe(403);
    expect((await call(server, keys.other, 'GET', '/api/v0/organization/turns')).status).toBe(403);

    // e ends: the oldest waiting is c, but u1 is at its limit; f (u2) starts.
    await open('e');
    await waitFor('f running', async () => (await status(ids.f)) === 'running', 30_000);
    expect(await statuses({ c: ids.c, d: ids.d, e: ids.e })).toEqual({ c: 'pending', d: 'pending', e: 'idle' });
    // a ends: c (older than d) starts.
    await open('a');
    await waitFor('c running', async () => (await status(ids.c)) === 'running', 30_000);
    expect(await status(ids.d)).toBe('pending');
    for (const name of ['b', 'c', 'd', 'f', 'x']) await open(name);
    await waitFor('every turn ended', async () => Object.values(await statuses({ ...ids, x })).every((s) => s === 'idle'), 60_000);
    for (const [name, id] of Object.entries(ids)) {
      const last = await db.prisma.sessionMessage.findFirst({ where: { sessionId: id }, orderBy: { seq: 'desc' } });
      expect(last?.content, name).toEqual([{ type: 'text', text: `done ${name}` }]);
    }
    await server.stop('SIGTERM');
  });

  it('loses no turn when a replica is killed in the middle of a burst', { timeout: 240_000 }, async () => {
    // Six run at once for u1; four wait on u1's limit when the replica running them dies.
    const limits = { AGENTPLANE_TURNS_PER_ORGANIZATION: '100', AGENTPLANE_TURNS_PER_OWNER: '6' };
    const doomed = await start(limits);
    const names = Array.from({ length: 10 }, (_, i) => `burst${i}`);
    const ids = await Promise.all(names.map((name) => post(doomed, 'u1', name)));
    await waitFor('six turns running', async () => (await db.prisma.session.count({ where: { id: { in: ids }, status: 'running' } })) === 6, 30_000);
    const survivor = await start(limits);
    expect(await doomed.stop('SIGKILL')).toBeNull();
    for (const name of names) await open(name);
    await waitFor(
      'every turn of the burst ended',
      async () => (await db.prisma.session.count({ where: { id: { in: ids }, status: 'idle' } })) === ids.length,
      150_000,
      250,
    );
    // Each turn answered: the running ones continued on the survivor, the waiting ones started there.
    for (const [i, id] of ids.entries()) {
      const last = await db.prisma.sessionMessage.findFirst({ where: { sessionId: id }, orderBy: { seq: 'desc' } });
      expect(last?.role, names[i]).toBe('assistant');
      const text = (last?.content as { text?: string }[])[0]?.text ?? '';
      expect(text === `done ${names[i]}` || text.startsWith('The turn failed'), `${names[i]}: ${text}`).toBe(true);
    }
    // No job is left behind either: the turns' own and the ones sent when slots freed (which find nothing to do) all end.
    const jobsLeft = async () =>
      Number(
        (
          await db.prisma.$queryRaw<
            { n: bigint }[]
          >`SELECT count(*) AS n FROM pgboss.job WHERE name = 'sessions.turn' AND state IN ('active', 'retry', 'created')`
        )[0]!.n,
      );
    await waitFor('the turn jobs to end', async () => (await jobsLeft()) === 0, 30_000, 250);
    expect((await call(survivor, keys.manager, 'GET', '/api/v0/organization/turns')).body).toMatchObject({ running: 0, pending: 0 });
  });
});
