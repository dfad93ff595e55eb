import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncGitIntegrations } from '../../src/modules/integrations/seed.ts';
import { hexToUuid } from '../../src/ssh/index.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { agentUser } from '../support/agent-cli.ts';
import { isRoot } from '../support/sshd.ts';
import { BACKENDS } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

/**
 * `agentplane agent` registering a machine through the real API and serving the control plane
 * through the real SSH gateway: no sshd and no inbound port on the machine. As root the agent runs
 * as the unprivileged test user, as it would on a developer's machine.
 */

const BIN = path.resolve('bin/agentplane.js');

describe.each(BACKENDS)('byom machines registered by `agentplane agent` on %s', (backend) => {
  let api: TestApi;
  let agent: ChildProcess;
  let stderr = '';
  let exited: Promise<number | null>;
  const who = agentUser();
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-agent-state-'));
  const name = `laptop-${backend}`;

  beforeAll(async () => {
    api = await startTestApi(backend, { worker: true, gateway: true });
    if (who.uid !== undefined) fs.chownSync(stateDir, who.uid, who.gid!);
    agent = spawn(process.execPath, [BIN, 'agent', '--url', api.url, '--name', name, '--state-dir', path.join(stateDir, 'agent')], {
      uid: who.uid,
      gid: who.gid,
      cwd: '/',
      env: { PATH: process.env.PATH, HOME: who.home, AGENTPLANE_API_KEY: api.acme.members.user.apiKey },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    agent.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    exited = new Promise((resolve) => agent.once('exit', (code) => resolve(code)));
  });
  afterAll(async () => {
    if (agent.exitCode === null && agent.signalCode === null) {
      agent.kill('SIGTERM');
      await exited;
    }
    await api?.close();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  const as = () => api.acme.members.user.apiKey;
  const computerNamed = () => api.call('GET', `/api/v0/computers/name/${name}`, { as: as() });

  it('registers the machine: active once reachable, its own host id and user, the relay on the API address as relayAgentUrl', async () => {
    // Active means reachable: the first read that says so is followed by a call on the machine that works.
    let last: unknown;
    const res = await waitFor(
      () => `the registration, active: ${JSON.stringify(last)}\n${stderr}`,
      async () => {
        const r = await computerNamed();
        last = r.body;
        return r.status === 200 && r.body.status === 'active' ? r : undefined;
      },
      60_000,
    );
    const metrics = await api.call('GET', `/api/v0/computers/${res.body.id}/metrics`, { as: as() });
    expect(metrics.status, JSON.stringify(metrics.body)).toBe(200);
    // It was registered provisioning, and turned active when the set-up reached it through the tunnel.
    const events = await api.db.prisma.event.findMany({ where: { computerId: res.body.id, type: 'computer.status' }, orderBy: { id: 'asc' } });
    expect(events.map((e) => (e.data as { status: string }).status)).toEqual(['provisioning', 'active']);
    expect(res.body).toMatchObject({
      providerType: 'byom',
      status: 'active',
      remoteUser: who.username,
      hostId: hexToUuid(fs.readFileSync('/etc/machine-id', 'utf8').trim()),
      relayAgentUrl: `${api.url.replace(/^http/, 'ws')}/api/v0/relay/agent`,
      relayClientUrl: `${api.url.replace(/^http/, 'ws')}/api/v0/computers/${res.body.id}/relay`,
      ownerId: api.acme.members.user.userId,
    });
    const stored = await api.db.prisma.computer.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(stored.connectionType).toBe('agent');
    expect(stored.agentPublicKey).toMatch(/^ssh-ed25519 /);
    expect(stored.hostKeyFingerprint).toMatch(/^SHA256:/);
    // The API key was only for registering: it is in no file of the agent's state.
    const files = fs.readdirSync(path.join(stateDir, 'agent'));
    for (const f of files) expect(fs.readFileSync(path.join(stateDir, 'agent', f), 'utf8')).not.toContain(as());
  });

  it('connects through the tunnel: the set-up job completes connect and verify', async () => {
    const { body } = await computerNamed();
    const steps = await waitFor('connect and verify', async () => {
      const r = await api.call('GET', `/api/v0/computers/${body.id}`, { as: as() });
      const s = r.body.provisioningSteps as { id: string; status: string }[];
      return s.every((x) => x.status === 'completed') ? s : undefined;
    });
    expect(steps.map((s) => s.id)).toEqual(['connect', 'verify']);
  });

  it('runs metrics and refresh on the machine through the agent, as the agent’s user', async () => {
    const { body } = await computerNamed();
    const metrics = await api.call('GET', `/api/v0/computers/${body.id}/metrics`, { as: as() });
    expect(metrics.status).toBe(200);
    expect(metrics.body[0].cpuCount).toBe(os.cpus().length);
    if (!isRoot) return;
    await syncGitIntegrations(api.db.prisma, api.machines.secrets, [
      { organization: api.acme.id, host: 'git.agent.example', username: 'bot', token: 'agent-token-1' },
    ]);
    const refreshed = await api.call('POST', `/api/v0/computers/${body.id}/refresh`, { as: as() });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body).toEqual({ configured: 1 });
    const file = path.join(who.home, '.config/agentplane/git-credentials');
    expect(fs.readFileSync(file, 'utf8')).toContain('agent-token-1');
    expect(fs.statSync(file).uid).toBe(who.uid);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    await syncGitIntegrations(api.db.prisma, api.machines.secrets, []);
    await api.call('POST', `/api/v0/computers/${body.id}/refresh`, { as: as() });
  });

  it('another organization cannot reach it', async () => {
    const { body } = await computerNamed();
    const res = await api.call('GET', `/api/v0/computers/${body.id}/metrics`, { as: api.globex.members.owner.apiKey });
    expect(res.status).toBe(404);
  });

  it('deleting the computer drops the tunnel and the gateway refuses the agent from then on', async () => {
    const { body } = await computerNamed();
    expect((await api.call('DELETE', `/api/v0/computers/${body.id}`, { as: as() })).status).toBe(204);
    const code = await Promise.race([exited, sleep(20_000).then(() => 'still running')]);
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/refused|deleted/i);
  });
});
