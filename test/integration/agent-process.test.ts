import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAgent } from '../../src/on-machine/machine-agent/agent.ts';
import { RegistrationRefused } from '../../src/on-machine/machine-agent/registration.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createSshGateway, parsePublicKeyLine, type SshGateway } from '../../src/relay/gateway/index.ts';
import { createSshClient, generateKeyPair, hexToUuid, SshError, type SshClient, type SshTarget } from '../../src/ssh/index.ts';
import { listenOnFreePort } from '../support/http.ts';
import { waitFor } from '../support/wait.ts';

/**
 * `agentplane agent` as its own process (runAgentCommand, as the CLI calls it), registering with a
 * small real HTTP server that answers the computers API's contract, then serving the control
 * plane through the real SSH gateway. Process-group kills and SIGTERM are real.
 */

const log = createLogger({ level: 'silent' });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-agent-'));
const user = os.userInfo().username;
const API_KEY = `ap_test_${randomBytes(8).toString('hex')}`;
const commandModule = pathToFileURL(path.resolve('src/on-machine/machine-agent/command.ts')).href;

let gateway: SshGateway;
let controlPlane: { url: string; close(): Promise<void> };
/** What the computers API would store: agent key and host key fingerprints per computer id. */
const agentKeys = new Map<string, string>();
const hostKeys = new Map<string, string>();
const registrations: Array<{ body: Record<string, unknown>; status: number }> = [];
/** Answers to send before registering normally (e.g. 503 while "starting"). */
const upcomingFailures: number[] = [];
let nextId = 1;

function startControlPlane(): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.use(express.json());
  app.post('/api/v0/computers', (req, res) => {
    const body = req.body as { name: string; hostId: string; remoteUser: string; connection: { agentPublicKey: string; hostPublicKey: string } };
    const answer = (status: number, json: unknown) => {
      registrations.push({ body: req.body as Record<string, unknown>, status });
      res.status(status).json(json);
    };
    if (req.headers.authorization !== `Bearer ${API_KEY}`)
      return answer(401, { detail: 'the API key is invalid or revoked', status: 401, title: 'Unauthorized' });
    const failure = upcomingFailures.shift();
    if (failure) return answer(failure, { detail: 'starting up', status: failure, title: 'Service Unavailable' });
    if (registrations.some((r) => r.status === 201 && r.body.name === body.name)) {
      return answer(409, { detail: `a computer named "${body.name}" already exists; choose another name`, status: 409, title: 'Conflict' });
    }
    const id = `cmp_${nextId++}`;
    agentKeys.set(id, parsePublicKeyLine(body.connection.agentPublicKey).fingerprint);
    hostKeys.set(id, parsePublicKeyLine(body.connection.hostPublicKey).fingerprint);
    answer(201, {
      id,
      name: body.name,
      providerType: 'byom',
      status: 'active',
      hostId: body.hostId,
      remoteUser: body.remoteUser,
      relayAgentUrl: `ssh://127.0.0.1:${gateway.address()!.port}`,
      createdAt: new Date().toISOString(),
    });
  });
  return listenOnFreePort(app);
}

interface AgentProcess {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Runs the agent as another user (root only): uid, gid and that user's login environment. */
interface RunAs {
  uid: number;
  gid: number;
  env: NodeJS.ProcessEnv;
}

function spawnAgent(opts: { name: string; stateDir: string; apiKey?: string; runAs?: RunAs }): AgentProcess {
  const options = { url: controlPlane.url, name: opts.name, stateDir: opts.stateDir, apiKey: opts.apiKey };
  // What src/main.ts does with the command's result: print the error, exit 1.
  const script =
    `import { runAgentCommand } from ${JSON.stringify(commandModule)};\n` +
    `runAgentCommand(${JSON.stringify(options)}).catch((err) => { process.stderr.write('agentplane: ' + err.message + '\\n'); process.exit(1); });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'ignore', 'pipe'],
    ...(opts.runAs && { uid: opts.runAs.uid, gid: opts.runAs.gid, env: { ...process.env, ...opts.runAs.env } }),
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stderr: () => stderr, exited };
}

/** A zombie counts as dead: killed, only waiting for its reaper. */
function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  } catch {
    return false;
  }
}

async function exitWithin(agent: AgentProcess, ms: number): Promise<number | null> {
  return Promise.race([
    agent.exited,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`agent still running after ${ms} ms:\n${agent.stderr()}`)), ms)),
  ]);
}

function targetFor(computerId: string): SshTarget {
  return {
    host: computerId,
    port: gateway.address()!.port,
    username: user,
    privateKey: generateKeyPair().privateKey,
    hostKeyFingerprint: hostKeys.get(computerId),
    dial: (signal) => gateway.dial(computerId, signal),
  };
}

function localMachineId(): string | undefined {
  for (const file of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    const id = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : '';
    if (/^[0-9a-f]{32}$/.test(id)) return hexToUuid(id);
  }
  return undefined;
}

const spawned: AgentProcess[] = [];
let ssh: SshClient;

beforeAll(async () => {
  gateway = await createSshGateway({
    listen: { host: '127.0.0.1', port: 0 },
    hostKey: generateKeyPair().privateKey,
    authorize: async (computerId, key) => agentKeys.get(computerId) === key.fingerprint,
    log,
  });
  controlPlane = await startControlPlane();
  ssh = createSshClient();
});

afterAll(async () => {
  for (const a of spawned) a.child.kill('SIGKILL');
  await ssh?.close();
  await gateway?.close();
  await controlPlane?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('agentplane agent as a separate process', () => {
  const stateDir = path.join(tmp, 'laptop');
  let computerId: string;

  it('registers the machine, keeps its keys private and connects to the gateway', async () => {
    const agent = spawnAgent({ name: 'laptop', stateDir, apiKey: API_KEY });
    spawned.push(agent);
    await waitFor('registration', () => registrations.some((r) => r.status === 201));
    computerId = `cmp_${nextId - 1}`;
    await waitFor(
      () => `the agent to connect:\n${agent.stderr()}`,
      () => gateway.isConnected(computerId),
    );

    const { body } = registrations.find((r) => r.status === 201)!;
    expect(body).toMatchObject({ name: 'laptop', provider: 'byom', remoteUser: user, connection: { type: 'agent' } });
    const machineId = localMachineId();
    if (machineId) expect(body.hostId).toBe(machineId);
    else expect(body.hostId).toMatch(/^[0-9a-f-]{36}$/);

    expect(fs.statSync(stateDir).mode & 0o777).toBe(0o700);
    for (const file of ['client_key', 'host_key', 'state.json']) expect(fs.statSync(path.join(stateDir, file)).mode & 0o777).toBe(0o600);
    const readState = () => JSON.parse(fs.readFileSync(path.join(stateDir, 'state.json'), 'utf8')) as Record<string, unknown>;
    // The gateway counts the agent as connected a moment before the agent has pinned its key.
    await waitFor('the gateway host key to be pinned', () => readState().gatewayHostKey !== undefined);
    const state = readState();
    expect(state).toMatchObject({ computerId, url: controlPlane.url, relayAgentUrl: `ssh://127.0.0.1:${gateway.address()!.port}` });
    expect(state.gatewayHostKey).toMatch(/^SHA256:/);
    expect(JSON.stringify(state)).not.toContain(API_KEY);

    // The command runs in a process group of its own, led by a child of the agent process.
    const res = await ssh.exec(targetFor(computerId), 'ps -o ppid= -p $(ps -o pgid= -p $$)');
    expect(Number(res.stdout.trim())).toBe(agent.child.pid);
  });

  it('kills a cancelled command and everything it started', async () => {
    const pidFile = path.join(tmp, 'cancelled.pid');
    const abort = new AbortController();
    const running = ssh.exec(targetFor(computerId), `sleep 120 & echo $! > ${pidFile}; wait`, { signal: abort.signal });
    await waitFor('the pid file', () => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n'));
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    expect(alive(pid)).toBe(true);
    abort.abort();
    await expect(running).rejects.toMatchObject({ kind: 'cancelled' });
    await waitFor(`process ${pid} to die`, () => !alive(pid), 5_000);
  });

  it('stops on SIGTERM, killing the commands it runs, and exits 0', async () => {
    const agent = spawned.at(-1)!;
    const pidFile = path.join(tmp, 'stopped.pid');
    const running = ssh.exec(targetFor(computerId), `sleep 120 & echo $! > ${pidFile}; wait`);
    running.catch(() => {});
    await waitFor('the pid file', () => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n'));
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    agent.child.kill('SIGTERM');
    expect(await exitWithin(agent, 5_000)).toBe(0);
    expect(agent.stderr()).toContain('SIGTERM: stopping');
    const err = await running.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SshError);
    expect((err as SshError).kind).toBe('connection_lost');
    await waitFor(`process ${pid} to die`, () => !alive(pid), 5_000);
    expect(gateway.isConnected(computerId)).toBe(false);
  });

  it('on restart skips registration and connects with the keys it has', async () => {
    const before = registrations.length;
    const agent = spawnAgent({ name: 'laptop', stateDir });
    spawned.push(agent);
    await waitFor(
      () => `the agent to reconnect:\n${agent.stderr()}`,
      () => gateway.isConnected(computerId),
    );
    expect(registrations.length).toBe(before);
    expect((await ssh.exec(targetFor(computerId), 'echo again')).stdout).toBe('again\n');
  });

  it('exits non-zero with a clear message once the gateway refuses its key (computer deleted)', async () => {
    const agent = spawned.at(-1)!;
    agentKeys.delete(computerId);
    gateway.disconnect(computerId);
    expect(await exitWithin(agent, 10_000)).toBe(1);
    expect(agent.stderr()).toMatch(/refused this agent's key for computer cmp_\d+; the computer was probably deleted/);
  });

  it('exits non-zero with the API detail when the name is taken (409), storing no registration', async () => {
    const otherDir = path.join(tmp, 'second-laptop');
    const agent = spawnAgent({ name: 'laptop', stateDir: otherDir, apiKey: API_KEY });
    spawned.push(agent);
    expect(await exitWithin(agent, 10_000)).toBe(1);
    expect(agent.stderr()).toContain('(409): a computer named "laptop" already exists; choose another name');
    const state = fs.existsSync(path.join(otherDir, 'state.json')) ? fs.readFileSync(path.join(otherDir, 'state.json'), 'utf8') : '{}';
    expect(JSON.parse(state)).not.toHaveProperty('computerId');
  });

  it('refuses to register without an API key', async () => {
    const agent = spawnAgent({ name: 'no-key', stateDir: path.join(tmp, 'no-key') });
    spawned.push(agent);
    expect(await exitWithin(agent, 10_000)).toBe(1);
    expect(agent.stderr()).toContain('pass --api-key (or set AGENTPLANE_API_KEY)');
  });
});

/** `nobody`, where the tests run as root: an agent that really is an ordinary user. */
function nobody(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const entry = spawnSync('getent', ['passwd', 'nobody'], { encoding: 'utf8' }).stdout.trim().split(':');
  if (entry.length < 7) return undefined;
  return { uid: Number(entry[2]), gid: Number(entry[3]), env: { HOME: entry[5], USER: 'nobody', LOGNAME: 'nobody' } };
}
const runAs = nobody();

describe.skipIf(!runAs)('agentplane agent as an unprivileged user (tests run as root)', () => {
  it('runs commands and file operations as that user: the system refuses what the user may not do', async () => {
    const own = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-nobody-'));
    fs.chownSync(own, runAs!.uid, runAs!.gid);
    const rootOnly = path.join(os.tmpdir(), `agentplane-root-only-${randomBytes(4).toString('hex')}`);
    fs.writeFileSync(rootOnly, 'secret', { mode: 0o600 });
    const agent = spawnAgent({ name: 'unprivileged', stateDir: path.join(own, 'state'), apiKey: API_KEY, runAs });
    spawned.push(agent);
    try {
      await waitFor(
        () => `registration:\n${agent.stderr()}`,
        () => registrations.some((r) => r.status === 201 && r.body.name === 'unprivileged'),
      );
      const registration = registrations.find((r) => r.status === 201 && r.body.name === 'unprivileged')!;
      expect(registration.body.remoteUser).toBe('nobody');
      const id = [...agentKeys.keys()].at(-1)!;
      await waitFor(
        () => `the agent to connect:\n${agent.stderr()}`,
        () => gateway.isConnected(id),
      );
      const target = { ...targetFor(id), username: 'nobody' };

      // nobody's home (/nonexistent) does not exist: commands start in /, as sshd does it.
      const who = await ssh.exec(target, 'printf "%s|%s|%s" "$(id -un)" "$(pwd)" "$HOME"');
      expect(who.stdout).toBe(`nobody|/|${runAs!.env.HOME}`);

      expect(await ssh.readFile(target, rootOnly).catch((e: unknown) => e)).toMatchObject({ kind: 'sftp_failed', code: 3 });
      expect(await ssh.writeFile(target, '/etc/agentplane-must-not-exist', 'x').catch((e: unknown) => e)).toMatchObject({ kind: 'sftp_failed', code: 3 });
      expect(fs.existsSync('/etc/agentplane-must-not-exist')).toBe(false);
      expect(await ssh.stat(target, path.join(own, 'missing'))).toBeNull();
      await ssh.writeFile(target, path.join(own, 'mine.txt'), 'ok');
      expect(fs.statSync(path.join(own, 'mine.txt')).uid).toBe(runAs!.uid);

      // A user name other than the agent's own is refused.
      expect(await ssh.exec({ ...target, username: 'root' }, 'true').catch((e: unknown) => e)).toMatchObject({ kind: 'auth_failed' });
    } finally {
      agent.child.kill('SIGTERM');
      await agent.exited;
      fs.rmSync(own, { recursive: true, force: true });
      fs.rmSync(rootOnly, { force: true });
    }
  });
});

describe('registration (in process)', () => {
  it('retries while the control plane is unavailable, and keeps a random host id where the machine has none', async () => {
    upcomingFailures.push(503);
    const stateDir = path.join(tmp, 'no-machine-id');
    const logs: string[] = [];
    const stop = new AbortController();
    const done = runAgent(
      { url: controlPlane.url, apiKey: API_KEY, name: 'container', stateDir, log: (l) => logs.push(l), machineIdFiles: [path.join(tmp, 'absent')] },
      stop.signal,
    );
    try {
      await waitFor('registration', () => registrations.some((r) => r.status === 201 && r.body.name === 'container'));
      expect(logs.some((l) => l.includes('failed (503): starting up; retrying in 1 s'))).toBe(true);
      const attempts = registrations.filter((r) => r.body.name === 'container');
      expect(attempts.map((r) => r.status)).toEqual([503, 201]);
      const hostId = attempts[1]!.body.hostId as string;
      expect(hostId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(attempts[0]!.body.hostId).toBe(hostId);
      expect(JSON.parse(fs.readFileSync(path.join(stateDir, 'state.json'), 'utf8'))).toMatchObject({ fallbackHostId: hostId });
    } finally {
      stop.abort();
      await done;
    }
  });

  it('fails at once on a refused API key, with the detail', async () => {
    const err = await runAgent(
      { url: controlPlane.url, apiKey: 'ap_wrong', name: 'intruder', stateDir: path.join(tmp, 'intruder'), log: () => {} },
      new AbortController().signal,
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RegistrationRefused);
    expect((err as RegistrationRefused).status).toBe(401);
    expect((err as Error).message).toContain('(401): the API key is invalid or revoked');
  });
});
