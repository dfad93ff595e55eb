import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { agentUser, runCli, startAgentProcess, type AgentProcess } from '../support/agent-cli.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { CLI } from '../support/server-process.ts';
import { sshdMissing, startSshd, type TestSshd } from '../support/sshd.ts';
import { waitFor } from '../support/wait.ts';
import { skipWithout } from '../support/parts.ts';

/**
 * People reaching their computers through the relay: `agentplane ssh` (a command, a shell, and
 * OpenSSH's ssh and scp through `--stdio`) and `agentplane port-forward`, as real processes
 * against the real API, to a machine whose `agentplane agent` keeps its tunnel over the API's
 * WebSocket. Access follows GET /computers/{id}; sessions are audited and end when the key is
 * revoked or the computer deleted.
 */

const who = agentUser();
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-relay-ssh-'));
let api: TestApi;
let agent: AgentProcess;
let computerId: string;
/** The service account's second key: the one the revocation test revokes. */
let robotKey: { id: string; value: string };

const env = (apiKey: string) => ({ AGENTPLANE_URL: api.url, AGENTPLANE_API_KEY: apiKey, AGENTPLANE_LOG_LEVEL: 'warn' });
const manager = () => api.acme.members.manager.apiKey;
const ssh = (args: string[], apiKey = manager(), input = '') => runCli(['ssh', ...args], { env: env(apiKey), input });

beforeAll(async () => {
  api = await startTestApi('pglite', { worker: true, gateway: true });
  // Owned by the service account: its keys and the organization's managers may reach it.
  agent = startAgentProcess({ url: api.url, apiKey: api.acme.serviceAccount.apiKey, name: 'devbox', stateDir });
  const computer = await waitFor(
    () => `the agent to register:\n${agent.stderr()}`,
    async () => (await api.db.prisma.computer.findFirst({ where: { name: 'devbox', deletedAt: null } })) ?? undefined,
  );
  computerId = computer.id;
  await waitFor(
    () => `the agent to connect:\n${agent.stderr()}`,
    () => agent.stderr().includes('connected to the relay'),
  );
  const created = await api.call('POST', `/api/v0/service-accounts/${api.acme.serviceAccount.id}/api-keys`, {
    as: api.acme.members.owner.apiKey,
    body: { name: 'relay-test' },
  });
  expect(created.status).toBe(201);
  robotKey = { id: created.body.apiKey.id, value: created.body.apiKey.value };
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await api?.close();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

describe('agentplane ssh through the relay', () => {
  it('reports relayClientUrl on the computer: the WebSocket under the API address', async () => {
    const res = await api.call('GET', `/api/v0/computers/${computerId}`, { as: manager() });
    expect(res.body.relayClientUrl).toBe(`${api.url.replace(/^http/, 'ws')}/api/v0/computers/${computerId}/relay`);
    expect(res.body.relayAgentUrl).toBe(`${api.url.replace(/^http/, 'ws')}/api/v0/relay/agent`);
  });

  it('runs one command as the remote user and exits with its status, stdout and stderr apart', async () => {
    const run = await ssh([computerId, '--', 'echo "$(id -un)"; echo oops >&2; exit 3']).done;
    expect(run).toMatchObject({ code: 3, stdout: `${who.username}\n`, stderr: 'oops\n' });
  });

  it('opens a shell that reads stdin when it is not a terminal', async () => {
    const run = await ssh([computerId], manager(), 'echo "in $PWD"\nexit 7\n').done;
    expect(run.code).toBe(7);
    expect(run.stdout).toBe(`in ${who.home}\n`);
  });

  it('carries OpenSSH as a ProxyCommand (--stdio): a terminal session and an scp copy', async () => {
    const proxy = [
      '-F',
      '/dev/null',
      '-o',
      `ProxyCommand=${process.execPath} ${CLI} ssh --stdio ${computerId}`,
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'BatchMode=yes',
      '-o',
      'LogLevel=ERROR',
    ];
    const terminal = await runCli([...proxy, '-tt', 'devbox', 'tty; exit 5'], { command: 'ssh', env: env(manager()) }).done;
    expect(terminal.stderr).toBe('');
    expect(terminal.code).toBe(5);
    expect(terminal.stdout).toMatch(/^\/dev\/pts\/\d+\r?\n/);

    const local = path.join(stateDir, 'copy-me.txt');
    fs.writeFileSync(local, 'through the relay\n');
    const remote = path.join(who.home, `relay-copy-${process.pid}.txt`);
    const copy = await runCli([...proxy, local, `devbox:${remote}`], { command: 'scp', env: env(manager()) }).done;
    expect(copy).toMatchObject({ code: 0, stderr: '' });
    expect(fs.readFileSync(remote, 'utf8')).toBe('through the relay\n');
    expect(fs.statSync(remote).uid).toBe(who.uid ?? process.getuid!());
    fs.rmSync(remote);
  });

  it("shows OpenSSH the machine's own host key, not the relay's: the agent ends the person's connection", async () => {
    const knownHosts = path.join(stateDir, 'known_hosts');
    const run = await runCli(
      [
        '-F',
        '/dev/null',
        '-o',
        `ProxyCommand=${process.execPath} ${CLI} ssh --stdio ${computerId}`,
        '-o',
        'StrictHostKeyChecking=accept-new',
        '-o',
        `UserKnownHostsFile=${knownHosts}`,
        '-o',
        'BatchMode=yes',
        '-o',
        'LogLevel=ERROR',
        'devbox',
        'true',
      ],
      { command: 'ssh', env: env(manager()) },
    ).done;
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const pinned = execFileSync('ssh-keygen', ['-lf', knownHosts], { encoding: 'utf8' });
    const computer = await api.db.prisma.computer.findUniqueOrThrow({ where: { id: computerId } });
    expect(pinned).toContain(`${computer.hostKeyFingerprint} devbox`);
  });

  it('forwards a local port to a port on the computer (port-forward)', async () => {
    const site = http.createServer((req, res) => res.end(`preview of ${req.url}`));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', () => resolve()));
    const remotePort = (site.address() as { port: number }).port;
    const forward = runCli(['port-forward', 'devbox', `0:${remotePort}`, '--api-key', robotKey.value, '--url', api.url]);
    try {
      const line = await waitFor(
        () => `the forward to start: ${forward.output().stderr}`,
        () => /forwarding 127\.0\.0\.1:(\d+) -> devbox:/.exec(forward.output().stderr)?.[1],
      );
      const res = await fetch(`http://127.0.0.1:${line}/app?x=1`);
      expect(await res.text()).toBe('preview of /app?x=1');
    } finally {
      forward.child.kill('SIGINT');
      expect((await forward.done).code).toBe(0);
      site.close();
    }
  });

  it('follows the access rules of GET /computers/{id}: 404 for another organization, 403 for a plain member', async () => {
    const other = await ssh([computerId, '--', 'true'], api.globex.members.owner.apiKey).done;
    expect(other.code).toBe(255);
    expect(other.stderr).toContain('404');
    // The WebSocket endpoint itself answers the same, before any upgrade.
    const status = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${api.url.replace(/^http/, 'ws')}/api/v0/computers/${computerId}/relay`, {
        headers: { authorization: `Bearer ${api.globex.members.owner.apiKey}` },
      });
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => reject(new Error('the relay opened for another organization')));
      ws.once('error', () => {});
    });
    expect(status).toBe(404);
    const member = await ssh([computerId, '--', 'true'], api.acme.members.user.apiKey).done;
    expect(member.code).toBe(255);
    expect(member.stderr).toContain('403');
    const nobody = await ssh([computerId, '--', 'true'], 'apk_not_a_key').done;
    expect(nobody.stderr).toContain('401');
  });

  it('refuses a connection back that no session waits for (a guessed, spent or missing token): 404, nothing spliced', async () => {
    const answer = (headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const ws = new WebSocket(`${api.url.replace(/^http/, 'ws')}/api/v0/relay/agent/return`, { headers });
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString())).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        ws.once('open', () => reject(new Error('the relay took a connection back nobody waits for')));
        ws.once('error', () => {});
      });
    for (const headers of [
      {} as Record<string, string>,
      { 'x-agentplane-return': 'rpl_nobody.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
      { 'x-agentplane-return': 'not a token' },
    ]) {
      const { status, body } = await answer(headers);
      expect(status).toBe(404);
      expect(JSON.parse(body).detail).toMatch(/No relay session waits for this connection back/);
    }
  });

  it('audits every session: who, which computer, when and how long', async () => {
    const records = await waitFor('the close records', async () => {
      const rows = await api.db.prisma.auditRecord.findMany({ where: { eventType: 'computer_relay_session' }, orderBy: { createdAt: 'asc' } });
      const closed = rows.filter((r) => (r.payload as { action: string }).action === 'closed');
      return closed.length >= 4 ? rows : undefined;
    });
    const opened = records.find((r) => (r.payload as { action: string }).action === 'opened')!;
    expect(opened).toMatchObject({ actorKind: 'human', actorId: api.acme.members.manager.userId, target: { computerId } });
    // Every session so far reached the agent on its own connection back to the relay.
    const openedHere = records.filter(
      (r) => (r.payload as { action: string }).action === 'opened' && (r.target as { computerId: string }).computerId === computerId,
    );
    const carried = new Set(openedHere.map((r) => (r.payload as { carried: string }).carried));
    expect([...carried]).toEqual(['returned']);
    const sessionId = (opened.payload as { sessionId: string }).sessionId;
    const closed = records.find(
      (r) => (r.payload as { action: string; sessionId: string }).action === 'closed' && (r.payload as { sessionId: string }).sessionId === sessionId,
    )!;
    expect((closed.payload as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(0);
    expect(closed.createdAt.getTime()).toBeGreaterThanOrEqual(opened.createdAt.getTime());
    expect(records.some((r) => r.actorKind === 'service' && r.actorId === api.acme.serviceAccount.id)).toBe(true);
  });

  it('revoking the key ends its open sessions', async () => {
    const before = await fetchOpenSessions();
    const long = ssh([computerId, '--', 'sleep 60'], robotKey.value);
    await waitFor('the session to open', async () => (await fetchOpenSessions()) > before);
    const revoked = await api.call('POST', `/api/v0/service-accounts/${api.acme.serviceAccount.id}/api-keys/${robotKey.id}/revoke`, {
      as: api.acme.members.owner.apiKey,
    });
    expect(revoked.status).toBe(204);
    const run = await Promise.race([long.done, sleep(20_000).then(() => undefined)]);
    expect(run, 'the session outlived its key').toBeDefined();
    expect(run!.code).toBe(255);
    expect(run!.stderr).toMatch(/the relay ended the session: access ended: .*revoked/);
  });

  it('deleting the computer ends its open sessions', async () => {
    const before = await fetchOpenSessions();
    const long = ssh([computerId, '--', 'echo started; sleep 60']);
    await waitFor('the session to open', async () => (await fetchOpenSessions()) > before, 45_000);
    // The command runs: the session is through, not still opening, when the computer goes.
    await waitFor('the command to start', () => long.output().stdout.includes('started'), 45_000);
    expect((await api.call('DELETE', `/api/v0/computers/${computerId}`, { as: manager() })).status).toBe(204);
    const run = await Promise.race([long.done, sleep(20_000).then(() => undefined)]);
    expect(run, 'the session outlived its computer').toBeDefined();
    expect(run!.code, JSON.stringify(run)).toBe(255);
    expect(run!.stderr).toMatch(/the relay ended the session|access ended/);
  });
});

describe.skipIf(skipWithout('agentplane ssh to an sshd computer', sshdMissing()))(
  'agentplane ssh to a computer the control plane reaches directly (sshd)',
  () => {
    let sshd: TestSshd;
    let id: string;

    beforeAll(async () => {
      sshd = await startSshd();
      sshd.authorizeKey((await api.call('GET', '/api/v0/computers/ssh-public-key', { as: manager() })).body.publicKey);
      const created = await api.call('POST', '/api/v0/computers', {
        as: manager(),
        body: { name: 'direct-box', provider: 'byom', remoteUser: sshd.username, connection: { host: sshd.host, port: sshd.port } },
      });
      expect(created.status, created.body?.detail).toBe(201);
      id = created.body.id;
    }, 60_000);

    afterAll(async () => {
      await sshd?.stop();
    });

    it('runs a command as the remote user through the relay, with no key on this side', async () => {
      const run = await ssh(['direct-box', '--', 'echo "$(id -un)"; exit 6']).done;
      expect(run).toMatchObject({ code: 6, stdout: `${sshd.username}\n` });
      // No agent to end it: the relay bridges the person's channels to its own connection.
      const rows = await api.db.prisma.auditRecord.findMany({ where: { eventType: 'computer_relay_session' } });
      const opened = rows.filter(
        (r) => (r.payload as { action: string }).action === 'opened' && (r.target as { computerId: string }).computerId !== computerId,
      );
      expect(opened.map((r) => (r.payload as { carried: string }).carried)).toEqual(['bridged']);
    });

    it("gives OpenSSH a terminal on the machine's sshd", async () => {
      const proxy = [
        '-F',
        '/dev/null',
        '-o',
        `ProxyCommand=${process.execPath} ${CLI} ssh --stdio ${id}`,
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'BatchMode=yes',
        '-o',
        'LogLevel=ERROR',
      ];
      const terminal = await runCli([...proxy, '-tt', 'direct-box', 'tty; exit 2'], { command: 'ssh', env: env(manager()) }).done;
      expect(terminal.code).toBe(2);
      expect(terminal.stdout).toMatch(/^\/dev\/pts\/\d+\r?\n/);
    });
  },
);

/** Sessions opened and not yet closed, by the audit records. */
async function fetchOpenSessions(): Promise<number> {
  const rows = await api.db.prisma.auditRecord.findMany({ where: { eventType: 'computer_relay_session' } });
  const actions = rows.map((r) => (r.payload as { action: string }).action);
  return actions.filter((a) => a === 'opened').length - actions.filter((a) => a === 'closed').length;
}
