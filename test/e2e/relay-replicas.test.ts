import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registrationTokenHash } from '../../src/modules/computers/dial-in.ts';
import { agentUser, runCli, startAgentProcess, type AgentProcess } from '../support/agent-cli.ts';
import { createTestDatabase, postgresMissing } from '../support/databases.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { startTcpBalancer } from '../support/tcp-balancer.ts';
import { waitFor } from '../support/wait.ts';
import { skipWithout } from '../support/parts.ts';

/**
 * Two real `agentplane serve` processes on one PostgreSQL database behind a load balancer, as a
 * Kubernetes install runs them. The agent keeps its tunnel to the first replica (the balancer
 * prefers it); requests and jobs on the second reach the machine through the first one's peer
 * listener. Then the first is killed with SIGKILL: the agent reconnects to the second, and the
 * same calls work again. A command running through the relay when its replica dies fails with
 * a clear message and exits; nothing hangs.
 */

const skip = skipWithout('the relay across two replicas', postgresMissing());

describe.skipIf(skip)('the relay across two replicas on PostgreSQL', () => {
  const who = agentUser();
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-replicas-'));
  // The agent may run as another user (agentUser), whose state directory lies below this one.
  fs.chmodSync(stateDir, 0o755);
  let database: { url: string; drop(): Promise<void> };
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let balancer: Awaited<ReturnType<typeof startTcpBalancer>>;
  let holder: ServerProcess;
  let other: ServerProcess;
  let agent: AgentProcess;
  /** The last test's third replica and the agent of the machine that registers again. */
  let third: ServerProcess | undefined;
  let again: AgentProcess | undefined;
  let env: Record<string, string>;
  let db: pg.Client;
  let key: string;
  let computerId: string;
  const backends: Array<{ host: string; port: number }> = [];

  const peerPort = (server: ServerProcess) => Number(/"port":(\d+),"msg":"relay peer listener/.exec(server.output())?.[1]);
  const call = async (server: ServerProcess, method: string, p: string, body?: unknown) => {
    const res = await fetch(`${server.url}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
  };
  /** The peer port of the replica holding the computer's tunnel, by the lease table. */
  const tunnelPeerPort = async () => {
    const { rows } = await db.query<{ peer_url: string }>(
      `SELECT r.peer_url FROM relay_tunnels t JOIN relay_replicas r ON r.id = t.replica_id WHERE t.computer_id = $1 AND r.expires_at > now()`,
      [computerId],
    );
    return rows[0] ? Number(new URL(rows[0].peer_url).port) : undefined;
  };

  async function sessionTurn(server: ServerProcess, marker: string): Promise<string> {
    const created = await call(server, 'POST', '/api/v0/sessions', { computerId, cwd: who.home, sessionSettings: { model: 'coder', autonomyLevel: 'high' } });
    expect(created.status, created.body?.detail).toBe(201);
    const id = created.body.sessionId as string;
    model.enqueue({ toolCalls: [{ id: `call_${marker}`, name: 'run_command', arguments: { command: `echo ${marker} as $(id -un)` } }] }, { text: 'done' });
    expect((await call(server, 'POST', `/api/v0/sessions/${id}/messages`, { text: 'Say who you are.' })).status).toBe(200);
    await waitFor('the turn to end', async () => (await call(server, 'GET', `/api/v0/sessions/${id}`)).body.status === 'idle', 60_000, 200);
    const messages = (await call(server, 'GET', `/api/v0/sessions/${id}/messages?limit=100`)).body.messages as Array<{
      role: string;
      content: Array<{ type: string; content?: string; isError?: boolean }>;
    }>;
    const result = messages.find((m) => m.role === 'tool')!.content[0]!;
    expect(result.isError ?? false).toBe(false);
    return result.content!;
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
    model = await startModelServer();
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    balancer = await startTcpBalancer(() => backends);
    env = {
      ...models.env,
      DATABASE_URL: database.url,
      AGENTPLANE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      // No AGENTPLANE_PUBLIC_URL: each answer names the address its request was sent to, so the agent,
      // registered through the balancer, keeps its tunnel through the balancer too.
      AGENTPLANE_LOCAL_PROVIDER: 'false',
    };
    // The holder runs no jobs: every job for the machine runs on the other replica, through the holder.
    holder = await startServerProcess({ ...env, AGENTPLANE_DATA_DIR: path.join(stateDir, 'a'), AGENTPLANE_WORKER: 'false' });
    key = holder.firstStartKey!;
    other = await startServerProcess({ ...env, AGENTPLANE_DATA_DIR: path.join(stateDir, 'b') });
    for (const s of [holder, other]) backends.push({ host: '127.0.0.1', port: Number(new URL(s.url).port) });

    agent = startAgentProcess({ url: balancer.url, apiKey: key, name: 'nat-box', stateDir: path.join(stateDir, 'agent') });
    computerId = await waitFor(
      () => `the registration:\n${agent.stderr()}`,
      async () => (await db.query<{ id: string }>(`SELECT id FROM computers WHERE name = 'nat-box' AND deleted_at IS NULL`)).rows[0]?.id,
      30_000,
    );
    await waitFor(
      () => `the tunnel on the first replica:\n${agent.stderr()}`,
      async () => (await tunnelPeerPort()) === peerPort(holder),
      30_000,
    );
  }, 180_000);

  afterAll(async () => {
    await Promise.all([agent?.stop(), again?.stop()]);
    await Promise.all([holder?.stop('SIGKILL'), other?.stop('SIGKILL'), third?.stop('SIGKILL')]);
    await balancer?.close();
    await db?.end();
    await database?.drop();
    models?.dispose();
    await model?.close();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  it('registers through the balancer with the relay on the address the agent was given', async () => {
    const res = await call(other, 'GET', `/api/v0/computers/${computerId}`);
    expect(res.body.relayAgentUrl).toBe(`${balancer.url.replace(/^http/, 'ws')}/api/v0/relay/agent`);
    // A person's client is told the address it asked, here one replica's own.
    expect(res.body.relayClientUrl).toBe(`${other.url.replace(/^http/, 'ws')}/api/v0/computers/${computerId}/relay`);
    // The set-up job ran on the replica without the tunnel.
    await waitFor(
      'connect and verify',
      async () => {
        const steps = (await call(other, 'GET', `/api/v0/computers/${computerId}`)).body.provisioningSteps as Array<{ status: string }>;
        return steps.every((s) => s.status === 'completed');
      },
      60_000,
      250,
    );
  });

  it('serves metrics and a session turn on the replica without the tunnel', { timeout: 120_000 }, async () => {
    const metrics = await call(other, 'GET', `/api/v0/computers/${computerId}/metrics`);
    expect(metrics.status, metrics.body?.detail).toBe(200);
    expect(metrics.body[0].cpuCount).toBe(os.cpus().length);
    expect(await sessionTurn(other, 'first')).toContain(`first as ${who.username}`);
    // A person's SSH connection, passed through this replica to the holder's tunnel and the agent.
    const ssh = await runCli(['ssh', computerId, '--', 'id -un; exit 4'], { env: { AGENTPLANE_URL: other.url, AGENTPLANE_API_KEY: key }, input: '' }).done;
    expect(ssh).toMatchObject({ code: 4, stdout: `${who.username}\n`, stderr: '' });
    // The agent's connection back reached the holder (the balancer's first); the holder handed it
    // to this replica through its peer listener, so the agent's own connection carried it.
    const { rows } = await db.query<{ payload: { carried: string } }>(
      `SELECT payload FROM audit_records WHERE event_type = 'computer_relay_session' AND payload->>'action' = 'opened' ORDER BY created_at DESC LIMIT 1`,
    );
    expect(rows[0]?.payload.carried).toBe('returned');
  });

  it('after the holder is killed (SIGKILL), the agent reconnects to the other replica and the same calls work', { timeout: 180_000 }, async () => {
    // A command through the relay (whichever replica the balancer gives it), on the holder's tunnel.
    const running = runCli(['ssh', computerId, '--', 'echo started; sleep 60'], { env: { AGENTPLANE_URL: other.url, AGENTPLANE_API_KEY: key }, input: '' });
    await waitFor(
      () => `the command to start: ${JSON.stringify(running.output())}`,
      () => running.output().stdout.includes('started'),
      30_000,
    );

    const killedAt = Date.now();
    expect(await holder.stop('SIGKILL')).toBeNull();
    const ended = await Promise.race([running.done, sleep(20_000).then(() => undefined)]);
    expect(ended, 'the command outlived the replica carrying it').toBeDefined();
    expect(ended!.code).toBe(255);
    expect(ended!.stderr).toMatch(
      /^agentplane: nat-box: (the connection to the relay was lost|the relay ended the session: the connection to the machine ended)/,
    );

    await waitFor(
      () => `the tunnel on the other replica:\n${agent.stderr()}`,
      async () => (await tunnelPeerPort()) === peerPort(other),
      20_000,
      50,
    );
    const reconnectMs = Date.now() - killedAt;
    expect(reconnectMs).toBeLessThan(15_000);

    const metrics = await call(other, 'GET', `/api/v0/computers/${computerId}/metrics`);
    expect(metrics.status, metrics.body?.detail).toBe(200);
    expect(await sessionTurn(other, 'second')).toContain(`second as ${who.username}`);
  });

  it('refuses a peer request without a valid token', async () => {
    const port = peerPort(other);
    const status = (token?: string) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port}/relay/peer/${computerId}`, { headers: token ? { 'x-agentplane-peer-token': token } : {} });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('open', () => reject(new Error('the peer listener opened a tunnel without a valid token')));
        ws.once('error', () => {});
      });
    expect(await status()).toBe(403);
    expect(await status(`${Date.now() + 10_000}.forged`)).toBe(403);
  });

  it("a machine registered again (an update's new token) takes over: the old agent's tunnel is dropped and it stops", { timeout: 120_000 }, async () => {
    // The old agent holds the tunnel on `other`; the new machine's connections go to a third replica.
    third = await startServerProcess({ ...env, AGENTPLANE_DATA_DIR: path.join(stateDir, 'c') });
    backends.unshift({ host: '127.0.0.1', port: Number(new URL(third.url).port) });
    expect(await tunnelPeerPort()).toBe(peerPort(other));
    // What an update of a dial-in computer does before its `up` (issueRegistrationToken again).
    const token = `apreg_${randomBytes(32).toString('base64url')}`;
    await db.query(`UPDATE computers SET registration_token_hash = $1, registration_expires_at = now() + interval '10 minutes' WHERE id = $2`, [
      registrationTokenHash(token),
      computerId,
    ]);
    again = startAgentProcess({
      url: balancer.url,
      apiKey: '',
      name: 'nat-box',
      stateDir: path.join(stateDir, 'agent-again'),
      env: { AGENTPLANE_REGISTRATION_TOKEN: token },
    });
    await waitFor(
      () => `the new machine's tunnel on the third replica:\n${again!.stderr()}`,
      async () => (await tunnelPeerPort()) === peerPort(third!),
      30_000,
      50,
    );
    // The replica that held the old tunnel drops it and reaches the machine through the new one.
    const exited = await Promise.race([agent.exited, sleep(20_000).then(() => 'running')]);
    expect(exited, `the old agent kept running:\n${agent.stderr()}`).toBe(1);
    expect(agent.stderr()).toMatch(/refused this agent's key for computer cmp_\w+; the computer was probably deleted, or another machine registered as it/);
    const metrics = await call(other, 'GET', `/api/v0/computers/${computerId}/metrics`);
    expect(metrics.status, metrics.body?.detail).toBe(200);
    expect(other.output()).toMatch(/"computerId":"cmp_\w+","msg":"agent connection dropped: its key is no longer its computer's/);
  });
});
