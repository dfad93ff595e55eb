import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.ts';
import { awaitRegistration, issueRegistrationToken, registrationTokenHash } from '../../src/modules/computers/dial-in.ts';
import { STEP } from '../../src/modules/computers/steps/names.ts';
import { moveStep } from '../../src/modules/computers/steps/store.ts';
import { generateKeyPair } from '../../src/ssh/index.ts';
import { agentUser, startAgentProcess, type AgentProcess } from '../support/agent-cli.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { storeProgramComputer } from '../support/program-computers.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Dial-in machines (`agent: true` from a template's program): the computer's stack is up and its
 * machine runs `agentplane agent --registration-token`, in either order. The real API, gateway,
 * job queue and agent process; the stack's side is what the provisioning job calls
 * (issueRegistrationToken before `pulumi up`, awaitRegistration in the step's completion).
 */
describe('dial-in registration of a program computer', () => {
  let api: TestApi;
  const agents: AgentProcess[] = [];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-dial-in-'));
  // The agent runs as the unprivileged test user, who makes its state directory under here.
  fs.chmodSync(tmp, 0o755);
  const who = agentUser();

  beforeAll(async () => {
    api = await startTestApi('pglite', { worker: true, gateway: true });
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await api?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const as = () => api.acme.members.user.apiKey;
  const deps = () => ({ db: api.db.prisma, secrets: api.machines.secrets });

  /** A program computer as its provisioning job leaves it before `pulumi up`: stored, its token issued. */
  async function provisioningComputer(name: string, ttlMs: number) {
    const id = await storeProgramComputer(api, name);
    const token = await issueRegistrationToken(deps(), id, new Date(Date.now() + ttlMs));
    return { id, token };
  }

  /** What the infrastructure step's completion does once `pulumi up` reported `agent: true`. */
  async function stackUp(id: string) {
    await moveStep(api.db.prisma, id, STEP.infrastructure, ['pending'], { status: 'completed', completedAt: new Date() });
    await inTransaction(api.db.prisma, (tx) => awaitRegistration(tx, api.queue, id));
  }

  function startAgent(name: string, token: string) {
    const agent = startAgentProcess({ url: api.url, apiKey: '', name, stateDir: path.join(tmp, name), env: { AGENTPLANE_REGISTRATION_TOKEN: token } });
    agents.push(agent);
    return agent;
  }

  const get = (id: string) => api.call('GET', `/api/v0/computers/${id}`, { as: as() });
  async function active(id: string, agent: AgentProcess) {
    let last: unknown;
    await waitFor(
      () => `${id} active: ${JSON.stringify(last)}\n${agent.stderr()}`,
      async () => {
        last = (await get(id)).body;
        return (last as { status: string }).status === 'active' ? true : undefined;
      },
      60_000,
    );
  }

  it('turns active when the stack is up first and the agent registers after; the token is spent', { timeout: 90_000 }, async () => {
    const { id, token } = await provisioningComputer('stack-first', 60_000);
    expect(token).toMatch(/^apreg_[A-Za-z0-9_-]{43}$/);
    // Derived from the computer: a provisioning retried after a kill hands the program the same token.
    expect(await issueRegistrationToken(deps(), id, new Date(Date.now() + 60_000))).toBe(token);
    // A registration timeout past the provisioning deadline moves that deadline: the operation outlasts its token.
    const deadline = (await api.db.prisma.computer.findUniqueOrThrow({ where: { id } })).operationDeadline!;
    const late = new Date(deadline.getTime() + 3_600_000);
    await issueRegistrationToken(deps(), id, late);
    const extended = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    expect(extended).toMatchObject({ operation: 'provision', registrationExpiresAt: late });
    expect(extended.operationDeadline!.getTime()).toBe(late.getTime() + 5 * 60_000);
    // A shorter one leaves the deadline where it was.
    await issueRegistrationToken(deps(), id, new Date(Date.now() + 60_000));
    expect((await api.db.prisma.computer.findUniqueOrThrow({ where: { id } })).operationDeadline).toEqual(extended.operationDeadline);
    await stackUp(id);
    const agent = startAgent('stack-first', token);
    await active(id, agent);

    const stored = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    expect(stored).toMatchObject({ connectionType: 'agent', remoteUser: who.username, registrationTokenHash: null, registrationExpiresAt: null });
    expect(stored.agentPublicKey).toMatch(/^ssh-ed25519 /);
    const { body } = await get(id);
    expect(body.provisioningSteps.map((s: { status: string }) => s.status)).toEqual(['completed', 'completed', 'completed']);
    // Commands run on the machine through the agent's tunnel, as its user.
    const metrics = await api.call('GET', `/api/v0/computers/${id}/metrics`, { as: as() });
    expect(metrics.status, JSON.stringify(metrics.body)).toBe(200);

    // Single use: the same token again registers nothing, and the computer keeps its agent's keys.
    const again = await register(token, 'stack-first');
    expect(again.status).toBe(401);
    expect(again.body.detail).toMatch(/not valid: it is unknown, already used/);
    expect((await api.db.prisma.computer.findUniqueOrThrow({ where: { id } })).agentPublicKey).toBe(stored.agentPublicKey);

    // An update issues it again (same value): a new machine re-registers the computer once, while it is live.
    expect(await issueRegistrationToken(deps(), id, new Date(Date.now() - 1), { again: true })).toBe(token);
    const expired = await register(token, 'stack-first');
    expect(expired.status).toBe(401);
    expect(expired.body.detail).toMatch(/expired at/);
    await issueRegistrationToken(deps(), id, new Date(Date.now() + 60_000), { again: true });
    const re = await register(token, 'stack-first');
    expect(re.status, JSON.stringify(re.body)).toBe(201);
    const replaced = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    expect(replaced).toMatchObject({ status: 'active', remoteUser: 'dev', registrationTokenHash: null, operation: null, operationDeadline: null });
    expect(replaced.agentPublicKey).not.toBe(stored.agentPublicKey);
    expect(replaced.hostKeyFingerprint).not.toBe(stored.hostKeyFingerprint);
    expect((await register(token, 'stack-first')).status).toBe(401);
  });

  it('waits for the stack when the agent registers while it is still coming up', { timeout: 90_000 }, async () => {
    const { id, token } = await provisioningComputer('agent-first', 60_000);
    const agent = startAgent('agent-first', token);
    await waitFor(
      () => `the registration: ${agent.stderr()}`,
      async () => (await api.db.prisma.computer.findUniqueOrThrow({ where: { id } })).agentPublicKey !== null,
    );
    // Its tunnel is up before the stack: the relay takes a registered agent of a computer still provisioning.
    await waitFor(
      () => `the agent's tunnel: ${agent.stderr()}`,
      () => agent.stderr().includes('connected to the relay'),
    );
    // Registered, but no set-up until the stack is up: still provisioning, its connect step not started.
    const before = (await get(id)).body;
    expect(before.status).toBe('provisioning');
    expect(before.provisioningSteps[1]).toMatchObject({ id: 'connect', status: 'pending' });
    await stackUp(id);
    await active(id, agent);
  });

  it('fails the computer at its connect step when no agent registers before the token expires', async () => {
    const { id, token } = await provisioningComputer('never-dials', 1_000);
    await stackUp(id);
    let last: Awaited<ReturnType<typeof get>>['body'];
    const failed = await waitFor(
      () => `never-dials in error: ${JSON.stringify(last)}`,
      async () => {
        last = (await get(id)).body;
        return last.status === 'error' ? last : undefined;
      },
      30_000,
    );
    expect(failed.provisioningSteps.find((s: { id: string }) => s.id === 'connect')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/did not dial in by .*--registration-token/),
    });
    expect(failed.provisioningSteps.at(-1)).toMatchObject({ id: 'verify', status: 'skipped' });
    // The token is spent with the computer's chance: an agent arriving late is told so.
    const late = await register(token, 'never-dials');
    expect(late.status).toBe(401);
    expect(await api.db.prisma.computer.findUniqueOrThrow({ where: { id } })).toMatchObject({ agentPublicKey: null, registrationTokenHash: null });
  });

  it('refuses bad input with a clear error and changes nothing', async () => {
    const { id, token } = await provisioningComputer('bad-input', 60_000);
    const keys = { agentPublicKey: generateKeyPair().publicKey, hostPublicKey: generateKeyPair().publicKey };
    const post = (body: unknown) => api.call('POST', '/api/v0/computers/register', { body });

    const badKey = await post({ registrationToken: token, remoteUser: 'dev', connection: { type: 'agent', ...keys, hostPublicKey: 'not a key' } });
    expect(badKey.status).toBe(400);
    expect(badKey.body.detail).toMatch(/connection.hostPublicKey must be an OpenSSH public key line/);
    const noToken = await post({ remoteUser: 'dev', connection: { type: 'agent', ...keys } });
    expect(noToken.status).toBe(400);
    const unknown = await post({ registrationToken: `${token}x`, remoteUser: 'dev', connection: { type: 'agent', ...keys } });
    expect(unknown.status).toBe(401);

    const stored = await api.db.prisma.computer.findUniqueOrThrow({ where: { id } });
    expect(stored).toMatchObject({ agentPublicKey: null, registrationTokenHash: registrationTokenHash(token), status: 'provisioning' });
  });

  /** What `agentplane agent` sends, with fresh keys. */
  function register(token: string, name: string) {
    const connection = { type: 'agent', agentPublicKey: generateKeyPair().publicKey, hostPublicKey: generateKeyPair().publicKey };
    return api.call('POST', '/api/v0/computers/register', { body: { registrationToken: token, name, remoteUser: 'dev', connection } });
  }
});
