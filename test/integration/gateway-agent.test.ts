import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import ssh2 from 'ssh2';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runAgent } from '../../src/on-machine/machine-agent/agent.ts';
import { openStateDir, type AgentStateDir } from '../../src/on-machine/machine-agent/state.ts';
import { TunnelRefused } from '../../src/on-machine/machine-agent/tunnel.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createAgentDialer } from '../../src/relay/agent-dialer.ts';
import { createSshGateway, PassThroughUnsupported, type SshGateway } from '../../src/relay/gateway/index.ts';
import { createReturns } from '../../src/relay/returns.ts';
import { describeHostKey } from '../../src/ssh/host-keys.ts';
import { createSshClient, generateKeyPair, SshError, type SshClient, type SshTarget } from '../../src/ssh/index.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The SSH gateway and the agent, in this process, over real TCP on loopback: the control plane's
 * SSH client reaches the agent's in-process SSH server through the reverse tunnel. Commands run
 * as real processes on this machine, files land in a temp directory.
 */

const log = createLogger({ level: 'silent' });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-gateway-'));
const user = os.userInfo().username;

interface RunningAgent {
  computerId: string;
  state: AgentStateDir;
  logs: string[];
  /** Settles when the agent stops: resolves after stop(), rejects when it gives up. */
  done: Promise<void>;
  connections: number;
  stop(): Promise<void>;
}

let gateway: SshGateway;
let gatewayPort: number;
const gatewayHostKey = generateKeyPair('gateway');
/** computer id -> fingerprint of the agent key registered for it: what the database would hold. */
const registered = new Map<string, string>();
const agents: RunningAgent[] = [];

async function prepareState(computerId: string, port = gatewayPort): Promise<AgentStateDir> {
  const state = await openStateDir(fs.mkdtempSync(path.join(tmp, 'state-')));
  await state.update({ computerId, url: 'http://control-plane.invalid', relayAgentUrl: `ssh://127.0.0.1:${port}` });
  return state;
}

/** Starts an agent whose state says it is registered as `computerId`. */
async function startAgent(computerId: string, opts: { state?: AgentStateDir; register?: boolean; gateway?: string } = {}): Promise<RunningAgent> {
  const state = opts.state ?? (await prepareState(computerId));
  if (opts.register !== false) registered.set(computerId, state.keys.client.fingerprint);
  const stop = new AbortController();
  const agent: RunningAgent = {
    computerId,
    state,
    logs: [],
    connections: 0,
    done: Promise.resolve(),
    stop: async () => {
      stop.abort();
      await agent.done.catch(() => {});
    },
  };
  agent.done = runAgent(
    {
      url: 'http://control-plane.invalid',
      name: computerId,
      stateDir: state.dir,
      gateway: opts.gateway,
      log: (line) => agent.logs.push(line),
      tunnel: { backoff: { initialMs: 100, maxMs: 1_000 }, onConnected: () => agent.connections++ },
    },
    stop.signal,
  );
  agent.done.catch(() => {});
  agents.push(agent);
  return agent;
}

function targetOf(agent: RunningAgent): SshTarget {
  return {
    host: agent.computerId,
    port: gatewayPort,
    username: user,
    // The agent's SSH server does not check the control plane's key (see session-server.ts).
    privateKey: gatewayHostKey.privateKey,
    hostKeyFingerprint: agent.state.keys.host.fingerprint,
    dial: (signal) => gateway.dial(agent.computerId, signal),
  };
}

/** A zombie counts as dead: killed, only waiting for init (here a slow reaper) to collect it. */
function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  } catch {
    return false;
  }
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

beforeAll(async () => {
  gateway = await createSshGateway({
    listen: { host: '127.0.0.1', port: 0 },
    hostKey: gatewayHostKey.privateKey,
    authorize: async (computerId, key) => registered.get(computerId) === key.fingerprint,
    log,
    keepaliveIntervalMs: 1_000,
  });
  gatewayPort = gateway.address()!.port;
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  await gateway?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('a connected agent', () => {
  let agent: RunningAgent;
  let ssh: SshClient;
  let target: SshTarget;

  beforeAll(async () => {
    agent = await startAgent('cmp_main');
    await waitFor('the agent to connect', () => gateway.isConnected('cmp_main'));
    ssh = createSshClient();
    target = targetOf(agent);
  });

  afterAll(async () => {
    await ssh?.close();
  });

  it('runs commands with streamed output, stdin and exit codes, in the home directory', async () => {
    const chunks: string[] = [];
    const res = await ssh.exec(target, 'echo one; sleep 0.2; echo two; echo oops >&2; exit 7', { onStdout: (c) => chunks.push(c.toString()) });
    expect(res).toEqual({ exitCode: 7, signal: null, stdout: 'one\ntwo\n', stderr: 'oops\n', truncated: false });
    expect(chunks.length).toBeGreaterThanOrEqual(2);

    expect((await ssh.exec(target, 'tr a-z A-Z', { stdin: 'piped in' })).stdout).toBe('PIPED IN');
    expect((await ssh.exec(target, 'pwd')).stdout.trim()).toBe(fs.realpathSync(os.homedir()));
    expect((await ssh.exec(target, 'id -un')).stdout.trim()).toBe(user);
    // The agent reports death by signal as exit-signal; the stdin watchdog wrapper as 128 + n.
    const killed = await ssh.exec(target, 'kill -TERM $$');
    expect(killed.signal ?? String(killed.exitCode)).toMatch(/^(SIGTERM|143)$/);
  });

  it('passes environment and working directory', async () => {
    const res = await ssh.exec(target, 'printf "%s|%s" "$GREETING" "$(pwd)"', { env: { GREETING: "it's a test" }, cwd: tmp });
    expect(res.stdout).toBe(`it's a test|${fs.realpathSync(tmp)}`);
    // The agent's own credential never reaches commands.
    process.env.AGENTPLANE_API_KEY = 'must-not-leak';
    try {
      const leak = await ssh.exec(target, 'printf %s "${AGENTPLANE_API_KEY:-unset}"');
      expect(leak.stdout).toBe('unset');
    } finally {
      delete process.env.AGENTPLANE_API_KEY;
    }
  });

  it('honours SSH env requests and kills the process group on an SSH signal request', async () => {
    const stream = await gateway.dial('cmp_main');
    const client = new ssh2.Client();
    await new Promise<void>((resolve, reject) => {
      client.once('ready', resolve).once('error', reject);
      client.connect({ sock: stream, username: user, hostVerifier: () => true });
    });
    try {
      const env = await new Promise<string>((resolve, reject) =>
        client.exec('printf %s "$FROM_ENV_REQUEST"', { env: { FROM_ENV_REQUEST: 'yes' } }, (err, ch) => {
          if (err) return reject(err);
          let out = '';
          ch.on('data', (d: Buffer) => (out += d.toString())).on('close', () => resolve(out));
        }),
      );
      expect(env).toBe('yes');

      const pidFile = path.join(tmp, `signal-${randomBytes(4).toString('hex')}`);
      const exit = await new Promise<{ code: number | null; signal?: string }>((resolve, reject) =>
        client.exec(`sleep 60 & echo $! > ${pidFile}; wait`, (err, ch) => {
          if (err) return reject(err);
          ch.on('exit', (code: number | null, signal?: string) => resolve({ code, signal }));
          ch.resume();
          void waitFor('the pid file', () => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n')).then(() => ch.signal('TERM'));
        }),
      );
      expect(exit).toMatchObject({ code: null, signal: 'SIGTERM' });
      const sleeper = Number(fs.readFileSync(pidFile, 'utf8'));
      await waitFor('the background sleep of the group to die', () => !alive(sleeper), 5_000);
    } finally {
      client.end();
    }
  });

  for (const remoteKill of ['auto', 'signal'] as const) {
    it(`kills a cancelled command and everything it started (remoteKill ${remoteKill})`, async () => {
      const client = createSshClient({ remoteKill });
      try {
        const pidFile = path.join(tmp, `cancel-${randomBytes(4).toString('hex')}`);
        const abort = new AbortController();
        const running = client.exec(target, `sleep 120 & echo $! > ${pidFile}; wait`, { signal: abort.signal });
        await waitFor('the pid file', () => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n'));
        const pid = Number(fs.readFileSync(pidFile, 'utf8'));
        expect(alive(pid)).toBe(true);
        abort.abort();
        const err = await errorOf(running);
        expect(err).toBeInstanceOf(SshError);
        expect((err as SshError).kind).toBe('cancelled');
        await waitFor(`process ${pid} to die`, () => !alive(pid), 5_000);

        const timedOut = await errorOf(client.exec(target, 'sleep 120', { timeoutMs: 300 }));
        expect((timedOut as SshError).kind).toBe('timeout');
      } finally {
        await client.close();
      }
    });
  }

  it('reads, writes, creates directories, stats, uploads and downloads files over SFTP', async () => {
    const dir = path.join(tmp, 'files', 'a', 'b');
    await ssh.mkdirp(target, dir, { mode: 0o750 });
    expect(fs.statSync(dir).isDirectory()).toBe(true);
    await ssh.mkdirp(target, dir);

    const secret = path.join(dir, 'secret.txt');
    await ssh.writeFile(target, secret, 'token=1\n', { mode: 0o600 });
    expect(fs.readFileSync(secret, 'utf8')).toBe('token=1\n');
    expect(fs.statSync(secret).mode & 0o777).toBe(0o600);
    await ssh.writeFile(target, secret, 'token=2\n');
    expect((await ssh.readFile(target, secret)).toString()).toBe('token=2\n');

    const st = await ssh.stat(target, secret);
    expect(st).toMatchObject({ size: 8, mode: 0o600, isFile: true, isDirectory: false, isSymbolicLink: false });
    expect((await ssh.stat(target, path.join(tmp, 'files')))?.isDirectory).toBe(true);
    expect(await ssh.stat(target, path.join(tmp, 'missing'))).toBeNull();

    const missing = await errorOf(ssh.readFile(target, path.join(tmp, 'missing')));
    expect(missing).toMatchObject({ kind: 'sftp_failed', code: 2 });
    fs.mkdirSync(path.join(tmp, 'file-not-dir'));
    const notAFile = await errorOf(ssh.writeFile(target, path.join(tmp, 'file-not-dir'), 'x'));
    expect(notAFile).toMatchObject({ kind: 'sftp_failed', code: 4 });

    // Several SFTP packets per file, in parallel, both ways.
    const big = randomBytes(3 * 1024 * 1024 + 17);
    const local = path.join(tmp, 'big.bin');
    fs.writeFileSync(local, big);
    const remote = path.join(dir, 'big.bin');
    await ssh.uploadFile(target, local, remote);
    expect(createHash('sha256').update(fs.readFileSync(remote)).digest('hex')).toBe(createHash('sha256').update(big).digest('hex'));
    const back = path.join(tmp, 'big-back.bin');
    await ssh.downloadFile(target, remote, back);
    expect(fs.readFileSync(back).equals(big)).toBe(true);
    expect((await ssh.readFile(target, remote)).equals(big)).toBe(true);
  });

  it('serves directory listings, renames and removals to any SFTP client', async () => {
    const base = path.join(tmp, 'listing');
    fs.mkdirSync(base);
    for (let i = 0; i < 150; i++) fs.writeFileSync(path.join(base, `f${i}`), String(i));
    const client = new ssh2.Client();
    await new Promise<void>((resolve, reject) => {
      client.once('ready', resolve).once('error', reject);
      void gateway.dial('cmp_main').then((sock) => client.connect({ sock, username: user, hostVerifier: () => true }), reject);
    });
    try {
      const sftp = await new Promise<ssh2.SFTPWrapper>((resolve, reject) => client.sftp((err, s) => (err ? reject(err) : resolve(s))));
      const call = <T>(fn: (cb: (err: Error | undefined | null, v?: T) => void) => void) =>
        new Promise<T>((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v as T))));
      const names = await call<ssh2.FileEntry[]>((cb) => sftp.readdir(base, cb));
      expect(names.map((n) => n.filename).sort()).toEqual(Array.from({ length: 150 }, (_, i) => `f${i}`).sort());
      await call<void>((cb) => sftp.rename(path.join(base, 'f1'), path.join(base, 'renamed'), cb));
      expect(fs.readFileSync(path.join(base, 'renamed'), 'utf8')).toBe('1');
      const clash = await errorOf(call<void>((cb) => sftp.rename(path.join(base, 'f2'), path.join(base, 'f3'), cb)));
      expect(clash).toMatchObject({ code: 4 });
      await call<void>((cb) => sftp.unlink(path.join(base, 'renamed'), cb));
      expect(fs.existsSync(path.join(base, 'renamed'))).toBe(false);
      await call<void>((cb) => sftp.chmod(path.join(base, 'f0'), 0o640, cb));
      expect(fs.statSync(path.join(base, 'f0')).mode & 0o777).toBe(0o640);
      expect(await call<string>((cb) => sftp.realpath('.', cb))).toBe(fs.realpathSync(os.homedir()));
      // The server answers the client's close, as OpenSSH does; ssh2 leaves that to the server code.
      const closed = new Promise<void>((resolve) => sftp.once('close', () => resolve()));
      sftp.end();
      await closed;
    } finally {
      client.end();
    }
  });

  it("passes a person's SSH connection through whole: any user name, the machine's own host key", async () => {
    const stream = await gateway.dial('cmp_main', undefined, 'person');
    const person = new ssh2.Client();
    let presented = '';
    try {
      await new Promise<void>((resolve, reject) => {
        person.once('ready', () => resolve()).once('error', reject);
        // As `agentplane ssh` and OpenSSH through --stdio log in: any name, no key.
        person.connect({ sock: stream, username: 'someone-else', hostVerifier: (key: Buffer) => ((presented = describeHostKey(key).fingerprint), true) });
      });
      const out = await new Promise<string>((resolve, reject) => {
        person.exec('id -un', (err, channel) => {
          if (err) return reject(err);
          let text = '';
          channel.on('data', (d: Buffer) => (text += d.toString())).once('close', () => resolve(text));
        });
      });
      expect(out).toBe(`${user}\n`);
      expect(presented).toBe(agent.state.keys.host.fingerprint);
    } finally {
      person.end();
    }
  });

  it("an agent on the SSH gateway port cannot connect back: a person's connection takes its tunnel", async () => {
    const dialer = createAgentDialer({ local: gateway, returns: createReturns('rpl_here') });
    const passed = await dialer.dialPerson('cmp_main', AbortSignal.timeout(5_000));
    if (passed.carried === 'tunnelled') passed.stream.destroy();
    expect(passed.carried).toBe('tunnelled');
  });

  it('runs 20 commands at once through the one tunnel', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => ssh.exec(target, `sleep 0.2; echo ${i}`)));
    expect(results.map((r) => r.stdout.trim())).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    expect(results.every((r) => r.exitCode === 0)).toBe(true);
  });

  it('reconnects with backoff after the gateway drops it, and the next command gets through', async () => {
    await ssh.exec(target, 'true');
    const before = agent.connections;
    const opened = ssh.stats().opened;
    expect(gateway.disconnect('cmp_main')).toBe(true);
    expect(gateway.isConnected('cmp_main')).toBe(false);
    await waitFor('the agent to reconnect', () => gateway.isConnected('cmp_main') && agent.connections > before);
    expect(agent.connections).toBe(before + 1);
    expect(agent.logs.some((l) => /lost the connection to the relay .* retrying in \d/.test(l))).toBe(true);
    const res = await ssh.exec(target, 'echo back');
    expect(res.stdout).toBe('back\n');
    expect(ssh.stats().opened).toBe(opened + 1);
  });
});

describe('refusals', () => {
  afterEach(() => {
    registered.delete('cmp_wrong_key');
  });

  it('dialling a computer without a connected agent fails with Unreachable', async () => {
    const err = await errorOf(gateway.dial('cmp_nobody'));
    expect(err).toBeInstanceOf(SshError);
    expect((err as SshError).kind).toBe('unreachable');
    expect((err as SshError).message).toMatch(/cmp_nobody.*agent is not connected/);

    const ssh = createSshClient();
    try {
      const target: SshTarget = {
        host: 'cmp_nobody',
        port: gatewayPort,
        username: user,
        privateKey: gatewayHostKey.privateKey,
        hostKeyFingerprint: gatewayHostKey.fingerprint,
        dial: (s) => gateway.dial('cmp_nobody', s),
      };
      expect(await errorOf(ssh.exec(target, 'true'))).toMatchObject({ kind: 'unreachable' });
    } finally {
      await ssh.close();
    }
  });

  it('refuses an agent whose key is not the one registered for its computer; the agent stops', async () => {
    const state = await prepareState('cmp_wrong_key');
    registered.set('cmp_wrong_key', generateKeyPair().fingerprint);
    const agent = await startAgent('cmp_wrong_key', { state, register: false });
    const err = await errorOf(agent.done);
    expect(err).toBeInstanceOf(TunnelRefused);
    expect((err as Error).message).toMatch(/refused this agent's key for computer cmp_wrong_key/);
    expect(gateway.isConnected('cmp_wrong_key')).toBe(false);
  });

  it('refuses a gateway whose host key changed since it was pinned', async () => {
    const agent = await startAgent('cmp_pin');
    await waitFor('the gateway host key to be pinned', async () => (await agent.state.read()).gatewayHostKey !== undefined);
    expect((await agent.state.read()).gatewayHostKey).toBe(gatewayHostKey.fingerprint);
    await agent.stop();

    const impostorKey = generateKeyPair('impostor');
    const impostor = await createSshGateway({ listen: { host: '127.0.0.1', port: 0 }, hostKey: impostorKey.privateKey, authorize: async () => true, log });
    try {
      const again = await startAgent('cmp_pin', { state: agent.state, gateway: `ssh://127.0.0.1:${impostor.address()!.port}` });
      const err = await errorOf(again.done);
      expect(err).toBeInstanceOf(TunnelRefused);
      expect((err as Error).message).toContain(`presented host key ${impostorKey.fingerprint}, but ${gatewayHostKey.fingerprint} is pinned`);
      expect(impostor.isConnected('cmp_pin')).toBe(false);
    } finally {
      await impostor.close();
    }
  });

  it("an agent asked to connect back that does not within 5 s: the person's connection takes its tunnel", { timeout: 15_000 }, async () => {
    const state = await prepareState('cmp_silent');
    registered.set('cmp_silent', state.keys.client.fingerprint);
    const silent = await new Promise<ssh2.Client>((resolve, reject) => {
      const c = new ssh2.Client();
      c.once('ready', () => {
        for (const bind of ['agentplane-return', 'agentplane-people']) c.forwardIn(bind, 22, () => {});
        c.forwardIn('agentplane', 22, (err) => (err ? reject(err) : resolve(c)));
      }).once('error', reject);
      c.connect({ host: '127.0.0.1', port: gatewayPort, username: 'cmp_silent', privateKey: state.keys.client.privateKey, hostVerifier: () => true });
    });
    const asked: string[] = [];
    silent.on('tcp connection', (info, accept) => {
      asked.push(info.destIP);
      accept().on('data', () => {});
    });
    try {
      const dialer = createAgentDialer({ local: gateway, returns: createReturns('rpl_here') });
      const started = Date.now();
      const passed = await dialer.dialPerson('cmp_silent', AbortSignal.timeout(10_000));
      if (passed.carried === 'tunnelled') passed.stream.destroy();
      expect(passed.carried).toBe('tunnelled');
      expect(Date.now() - started).toBeGreaterThanOrEqual(4_900);
      expect(asked).toEqual(['agentplane-return', 'agentplane-people']);
    } finally {
      silent.end();
    }
  });

  it('a newer agent connection for the same computer replaces the older one', async () => {
    const state = await prepareState('cmp_twice');
    registered.set('cmp_twice', state.keys.client.fingerprint);
    const connectRaw = () =>
      new Promise<ssh2.Client>((resolve, reject) => {
        const c = new ssh2.Client();
        c.once('ready', () => c.forwardIn('agentplane', 22, (err) => (err ? reject(err) : resolve(c)))).once('error', reject);
        c.connect({ host: '127.0.0.1', port: gatewayPort, username: 'cmp_twice', privateKey: state.keys.client.privateKey, hostVerifier: () => true });
      });
    const first = await connectRaw();
    const firstClosed = new Promise<void>((r) => first.once('close', () => r()));
    const second = await connectRaw();
    const opened = new Promise<Duplex>((resolve) => second.once('tcp connection', (_info, accept) => resolve(accept())));
    try {
      await firstClosed;
      expect(gateway.isConnected('cmp_twice')).toBe(true);
      const stream = await gateway.dial('cmp_twice');
      await opened;
      stream.destroy();
      // An agent that asked only for the control plane's forwarding (one older than people's
      // connections) takes none of a person's: the relay bridges those itself.
      expect(await errorOf(gateway.dial('cmp_twice', undefined, 'person'))).toBeInstanceOf(PassThroughUnsupported);
      expect(await errorOf(gateway.dial('cmp_twice', undefined, 'return'))).toBeInstanceOf(PassThroughUnsupported);
    } finally {
      first.end();
      second.end();
    }
  });
});
