import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish } from '../../src/modules/events/publish.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { GIT_COMMIT, skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';
import { connectSse, type SseClient } from '../support/sse.ts';
import { BACKENDS } from '../support/test-db.ts';

if (skipMachineTests) console.warn('skipping the computer event stream tests: sshd is missing');

/** Computer event streams through real HTTP, a byom computer on a real sshd being set up. */
describe.skipIf(skipMachineTests).each(BACKENDS)('computer event streams on %s', (backend) => {
  let api: TestApi;
  let machine: TestMachine;
  let owner: string;
  const clients: SseClient[] = [];

  beforeAll(async () => {
    machine = await startMachine();
    api = await startTestApi(backend, { worker: true, env: { AGENTPLANE_EVENTS_HEARTBEAT_SECONDS: '1', AGENTPLANE_EVENTS_CLIENT_BUFFER_BYTES: '16384' } });
    owner = api.acme.members.owner.apiKey;
    machine.sshd.authorizeKey((await api.call('GET', '/api/v0/computers/ssh-public-key', { as: owner })).body.publicKey);
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await api?.close();
    await machine?.stop();
  });

  const watch = async (path: string, token = owner) => {
    const client = await connectSse(`${api.url}${path}`, { token });
    clients.push(client);
    return client;
  };
  const register = async (name: string, repos: string[]) => {
    const res = await api.call('POST', '/api/v0/computers', {
      as: owner,
      body: { name, provider: 'byom', remoteUser: machine.sshd.username, connection: { host: machine.sshd.host, port: machine.sshd.port }, repos },
    });
    expect(res.status, res.body.detail).toBe(201);
    return res.body.id as string;
  };

  it('shows a set-up step by step: each clone as it starts and ends, a failed one with its error; then deletion, to the organization too', async () => {
    const repo = `${machine.scratch}/app-${backend}`;
    await machine.sh(`mkdir -p ${repo} && cd ${repo} && git init -q && echo hi > README.md && git add -A && ${GIT_COMMIT} -m init`);
    const org = await watch('/api/v0/events?types=computer.active,computer.deleted');
    const id = await register(`watched-${backend}`, [`file://${repo}`, 'file:///nonexistent/repo.git']);
    // Connected after the create answered: a computer still being set up is replayed from its start.
    const stream = await watch(`/api/v0/computers/${id}/events`);
    await stream.waitFor(
      (e) => e.event === 'computer.step' && e.data.data.step.id === 'clone-2' && e.data.data.step.status === 'failed',
      30_000,
      'clone-2 failed',
    );
    const steps = stream.events.filter((e) => e.event === 'computer.step').map((e) => `${e.data.data.step.id}:${e.data.data.step.status}`);
    expect(steps).toEqual(['clone-1:running', 'clone-1:completed', 'clone-2:running', 'clone-2:failed']);
    expect(stream.events[0]).toMatchObject({ event: 'computer.status', data: { computerId: id, data: { status: 'active' } } });
    const failed = stream.events.find((e) => e.event === 'computer.step' && e.data.data.step.status === 'failed')!;
    expect(failed.data.data.step.error).toMatch(/nonexistent/);
    expect(failed.data.data.step.name).toBe('Cloning file:///nonexistent/repo.git');

    const active = await org.waitFor((e) => e.event === 'computer.active' && e.data.computerId === id, 5_000, 'computer.active');
    expect(active.data.data).toMatchObject({ computerId: id, status: 'active' });
    expect((await api.call('DELETE', `/api/v0/computers/${id}`, { as: owner })).status).toBe(204);
    await stream.waitFor((e) => e.event === 'computer.deleted', 5_000, 'computer.deleted on the computer stream');
    await org.waitFor((e) => e.event === 'computer.deleted' && e.data.computerId === id, 5_000, 'computer.deleted for the organization');
    // A deleted computer is no longer reachable: the next heartbeat's check ends its stream.
    await stream.ended;
  });

  let kept: string;
  it('keeps to the computer access rules: another member and another organization get 404', async () => {
    const id = (kept = await register(`private-${backend}`, []));
    for (const token of [api.acme.members.user.apiKey, api.globex.members.owner.apiKey]) {
      const res = await watch(`/api/v0/computers/${id}/events`, token);
      expect(res.status).toBe(404);
    }
  });

  it('drops a client that stops reading instead of buffering for it without bound', async () => {
    const id = kept;
    const url = new URL(`${api.url}/api/v0/computers/${id}/events`);
    let received = 0;
    const closed = new Promise<string>((resolve) => {
      const req = http.get(url, { headers: { authorization: `Bearer ${owner}` } }, (res) => {
        expect(res.statusCode).toBe(200);
        res.once('data', (chunk: Buffer) => {
          received += chunk.length;
          // Reads nothing more: the server's buffer for it grows until it is dropped.
          res.pause();
        });
        res.on('close', () => resolve('closed'));
        res.on('error', () => resolve('error'));
      });
      req.on('error', () => resolve('error'));
    });
    await new Promise((r) => setTimeout(r, 300));
    const filler = 'x'.repeat(4_000);
    for (let i = 0; i < 40; i++) {
      await publish(
        api.db.prisma,
        Array.from({ length: 100 }, (_, n) => ({ type: 'computer.status' as const, computerId: id, data: { status: 'active', filler, n } })),
      );
    }
    expect(await closed).toMatch(/closed|error/);
    expect(received).toBeGreaterThan(0);
  });
});
