import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSshClient,
  ed25519KeyPair,
  generateKeyPair,
  hexToUuid,
  publicKeyOf,
  SshError,
  type PresentedHostKey,
  type SshClient,
  type SshTarget,
} from '../../src/ssh/index.ts';
import { netnsMissing, sshdMissing, startSshd, type TestSshd } from '../support/sshd.ts';
import { skipWithout } from '../support/parts.ts';
import { waitFor } from '../support/wait.ts';

const missing = sshdMissing();
const skip = skipWithout('the SSH tests', missing);
const noNetns = netnsMissing();
if (!skip && noNetns) console.warn(`skipping the second-machine SSH tests: ${noNetns}`);

function targetOf(s: TestSshd, extra: Partial<SshTarget> = {}): SshTarget {
  return { host: s.host, port: s.port, username: s.username, privateKey: s.privateKey, hostKeyFingerprint: s.hostKeyFingerprint, ...extra };
}

async function expectSshError(promise: Promise<unknown>, kind: SshError['kind']): Promise<SshError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SshError);
  expect((err as SshError).kind).toBe(kind);
  return err as SshError;
}

/** A `sleep` with a unique duration, so `pgrep` finds exactly the processes of one test. */
function uniqueSleep(): string {
  return `sleep 60.${randomBytes(4).readUInt32BE(0)}`;
}

function ppid(pid: number): number {
  // Fields after the parenthesised command name: state, ppid, ...
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

async function remoteProcesses(ssh: SshClient, target: SshTarget, pattern: string): Promise<string> {
  // "[s]leep" matches "sleep" but not the shell running this very pgrep.
  const res = await ssh.exec(target, `pgrep -f -- '[${pattern[0]}]${pattern.slice(1)}' || true`);
  return res.stdout.trim();
}

describe.skipIf(skip)('SSH connection layer against a real sshd', () => {
  let sshd: TestSshd;
  let ssh: SshClient;
  let target: SshTarget;

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    sshd = await startSshd();
    ssh = createSshClient();
    target = targetOf(sshd);
  });

  afterAll(async () => {
    await ssh?.close();
    await sshd?.stop();
  });

  describe('commands', () => {
    it('streams stdout and stderr while the command runs and reports the exit code', async () => {
      const chunks: Array<{ at: number; text: string }> = [];
      const errChunks: string[] = [];
      const res = await ssh.exec(target, 'echo one; sleep 0.3; echo two; echo oops >&2; exit 7', {
        onStdout: (c) => chunks.push({ at: Date.now(), text: c.toString() }),
        onStderr: (c) => errChunks.push(c.toString()),
      });
      const finished = Date.now();
      expect(res).toEqual({ exitCode: 7, signal: null, stdout: 'one\ntwo\n', stderr: 'oops\n', truncated: false });
      expect(chunks.map((c) => c.text).join('')).toBe('one\ntwo\n');
      expect(errChunks.join('')).toBe('oops\n');
      // "one" arrived before the command finished, not in one batch at the end.
      expect(chunks[0]!.text).toBe('one\n');
      expect(finished - chunks[0]!.at).toBeGreaterThanOrEqual(250);
    });

    it('reports a signal death as signal, not exit code', async () => {
      const res = await ssh.exec(target, 'kill -TERM $$');
      expect(res.exitCode).toBeNull();
      expect(res.signal).toBe('SIGTERM');
    });

    it('passes stdin, env and cwd', async () => {
      expect((await ssh.exec(target, 'tr a-z A-Z', { stdin: 'hello\nworld' })).stdout).toBe('HELLO\nWORLD');
      expect((await ssh.exec(target, 'cat')).stdout).toBe('');
      const env = await ssh.exec(target, 'printf "%s|%s" "$GREETING" "$OTHER"', { env: { GREETING: "it's $HOME `x`", OTHER: 'b c' } });
      expect(env.stdout).toBe("it's $HOME `x`|b c");
      const cwd = await ssh.exec(target, 'pwd', { cwd: '/usr/share' });
      expect(cwd.stdout).toBe('/usr/share\n');
      const nowhere = await ssh.exec(target, 'echo should-not-run', { cwd: '/no/such/dir' });
      expect(nowhere.exitCode).not.toBe(0);
      expect(nowhere.stdout).toBe('');
      await expect(ssh.exec(target, 'true', { env: { 'BAD-NAME': 'x' } })).rejects.toThrow(/invalid environment variable name/);
    });

    it('keeps only the tail of output beyond the bound, but streams all of it', async () => {
      let streamed = 0;
      const res = await ssh.exec(target, 'head -c 100000 /dev/zero | tr "\\0" a; echo END', {
        maxOutputBytes: 1000,
        onStdout: (c) => (streamed += c.length),
      });
      expect(streamed).toBe(100_004);
      expect(res.truncated).toBe(true);
      expect(res.stdout).toHaveLength(1000);
      expect(res.stdout.endsWith('aaaEND\n')).toBe(true);
    });

    it('runs 50 commands in parallel over one connection, never more sessions than MaxSessions', async () => {
      const client = createSshClient({ connectionsPerTarget: 1 });
      try {
        const dir = `/tmp/ap-sessions-${randomBytes(4).toString('hex')}`;
        await client.exec(target, `mkdir -p ${dir}`);
        const t0 = Date.now();
        const all = Promise.all(
          Array.from({ length: 50 }, (_, i) => client.exec(target, `touch ${dir}/${i}; ls ${dir} | wc -l; sleep 0.2; rm ${dir}/${i}; echo done-${i}`)),
        );
        await new Promise((r) => setTimeout(r, 100));
        expect(client.stats()).toMatchObject({ active: 10, queued: 40 });
        const results = await all;
        const elapsed = Date.now() - t0;
        results.forEach((r, i) => {
          expect(r.exitCode).toBe(0);
          expect(r.stdout).toContain(`done-${i}`);
        });
        const peak = Math.max(...results.map((r) => Number(r.stdout.split('\n')[0])));
        expect(peak).toBeLessThanOrEqual(10);
        expect(peak).toBeGreaterThanOrEqual(5);
        // 50 sessions of 0.2 s, 10 at a time: at least 5 waves.
        expect(elapsed).toBeGreaterThanOrEqual(1_000);
        expect(client.stats()).toMatchObject({ opened: 1, connections: 1, active: 0, queued: 0 });
      } finally {
        await client.close();
      }
    });

    it('spreads 50 commands over a few connections, filled one after the other, at most MaxSessions each', async () => {
      const client = createSshClient({ connectionsPerTarget: 3 });
      try {
        const dir = `/tmp/ap-lanes-${randomBytes(4).toString('hex')}`;
        await client.exec(target, `mkdir -p ${dir}`);
        // Five at once fit on the first connection: no second one opens.
        await Promise.all(Array.from({ length: 5 }, () => client.exec(target, 'true')));
        expect(client.stats()).toMatchObject({ opened: 1, connections: 1 });
        const all = Promise.all(
          Array.from({ length: 50 }, (_, i) => client.exec(target, `touch ${dir}/${i}; ls ${dir} | wc -l; sleep 0.3; rm ${dir}/${i}; echo done-${i}`)),
        );
        await waitFor('30 sessions on three connections', () => client.stats().active === 30 && client.stats().connections === 3);
        expect(client.stats()).toMatchObject({ active: 30, queued: 20, connections: 3 });
        const results = await all;
        results.forEach((r, i) => expect(r.stdout).toContain(`done-${i}`));
        const peak = Math.max(...results.map((r) => Number(r.stdout.split('\n')[0])));
        expect(peak).toBeLessThanOrEqual(30);
        expect(peak).toBeGreaterThan(10);
        expect(client.stats()).toMatchObject({ opened: 3, connections: 3, active: 0, queued: 0 });
      } finally {
        await client.close();
      }
    });
  });

  describe('timeouts and cancellation stop the remote process', () => {
    for (const remoteKill of ['auto', 'watchdog'] as const) {
      it(`timeout kills the whole command (${remoteKill})`, async () => {
        const client = createSshClient({ remoteKill });
        try {
          const sleeper = uniqueSleep();
          const t0 = Date.now();
          const err = await expectSshError(client.exec(target, `${sleeper} & ${sleeper}; echo never`, { timeoutMs: 500 }), 'timeout');
          expect(Date.now() - t0).toBeLessThan(2_000);
          expect(err.message).toMatch(new RegExp(`command on 127\\.0\\.0\\.1:${sshd.port} timed out after 500 ms`));
          await new Promise((r) => setTimeout(r, 200));
          expect(await remoteProcesses(client, target, sleeper)).toBe('');
        } finally {
          await client.close();
        }
      });

      it(`an AbortSignal cancels and kills the command (${remoteKill})`, async () => {
        const client = createSshClient({ remoteKill });
        try {
          const sleeper = uniqueSleep();
          const ac = new AbortController();
          let started!: () => void;
          const running = new Promise<void>((r) => (started = r));
          const call = client.exec(target, `echo started; ${sleeper}`, { signal: ac.signal, stdin: 'ignored input', onStdout: () => started() });
          await running;
          ac.abort();
          await expectSshError(call, 'cancelled');
          await new Promise((r) => setTimeout(r, 200));
          expect(await remoteProcesses(client, target, sleeper)).toBe('');
          // The session slot was released: the connection still serves commands.
          expect((await client.exec(target, 'echo ok')).stdout).toBe('ok\n');
        } finally {
          await client.close();
        }
      });
    }

    it('watchdog mode passes stdin and exit codes through', async () => {
      const client = createSshClient({ remoteKill: 'watchdog' });
      try {
        const res = await client.exec(target, 'tr a-z A-Z; exit 3', { stdin: 'abc' });
        expect(res).toMatchObject({ exitCode: 3, stdout: 'ABC' });
        // A background process the command leaves behind on purpose survives normal completion.
        const sleeper = uniqueSleep();
        await client.exec(target, `nohup ${sleeper} >/dev/null 2>&1 &`);
        await new Promise((r) => setTimeout(r, 200));
        expect(await remoteProcesses(client, target, sleeper)).not.toBe('');
        await client.exec(target, `pkill -f -- '[${sleeper[0]}]${sleeper.slice(1)}'`);
      } finally {
        await client.close();
      }
    });

    // What the server side sees when a client gives up on a connection (keepalives unanswered
    // while the machine was paused, a network cut): its session process ends, closing the command's pipes.
    for (const endWithConnection of [false, true]) {
      it(`a connection lost mid-command ${endWithConnection ? 'kills the command with endWithConnection' : 'leaves a silent command running by default'}`, async () => {
        const client = createSshClient();
        const sleeper = uniqueSleep();
        try {
          let started!: () => void;
          const running = new Promise<void>((r) => (started = r));
          const call = client.exec(target, `echo started; ${sleeper}`, { endWithConnection, onStdout: () => started() });
          await running;
          const [pid] = execFileSync('pgrep', ['-f', '--', `^${sleeper}$`], { encoding: 'utf8' })
            .trim()
            .split('\n')
            .map(Number);
          let session = pid!;
          while (session > 1 && !/^sshd(-session)?: .*@notty/.test(fs.readFileSync(`/proc/${session}/cmdline`, 'utf8'))) session = ppid(session);
          expect(session).toBeGreaterThan(1);
          process.kill(session, 'SIGKILL');
          await expectSshError(call, 'connection_lost');
          await new Promise((r) => setTimeout(r, 300));
          expect((await remoteProcesses(ssh, target, sleeper)) !== '').toBe(!endWithConnection);
        } finally {
          await ssh.exec(target, `pkill -f -- '[${sleeper[0]}]${sleeper.slice(1)}' || true`);
          await client.close();
        }
      });
    }

    it('an already aborted signal fails without running anything', async () => {
      await expectSshError(ssh.exec(target, 'true', { signal: AbortSignal.abort() }), 'cancelled');
    });
  });

  describe('files over SFTP', () => {
    it('writes, reads, stats, makes directories, uploads and downloads', async () => {
      const base = `/tmp/ap-sftp-${randomBytes(4).toString('hex')}`;
      const nested = `${base}/a/b/c`;
      await ssh.mkdirp(target, nested);
      await ssh.mkdirp(target, nested);
      expect(await ssh.stat(target, nested)).toMatchObject({ isDirectory: true, isFile: false });

      const payload = randomBytes(300_000);
      await ssh.writeFile(target, `${nested}/blob.bin`, payload, { mode: 0o600 });
      expect((await ssh.readFile(target, `${nested}/blob.bin`)).equals(payload)).toBe(true);
      expect(await ssh.stat(target, `${nested}/blob.bin`)).toMatchObject({ size: 300_000, isFile: true, mode: 0o600 });
      expect((await ssh.exec(target, `sha256sum ${nested}/blob.bin`)).stdout.split(' ')[0]).toBe(
        (await import('node:crypto')).createHash('sha256').update(payload).digest('hex'),
      );

      const local = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-sftp-local-'));
      try {
        fs.writeFileSync(path.join(local, 'up.txt'), 'uploaded from a local path\n');
        await ssh.uploadFile(target, path.join(local, 'up.txt'), `${base}/up.txt`);
        expect((await ssh.exec(target, `cat ${base}/up.txt`)).stdout).toBe('uploaded from a local path\n');
        await ssh.exec(target, `echo made remotely > ${base}/down.txt`);
        await ssh.downloadFile(target, `${base}/down.txt`, path.join(local, 'down.txt'));
        expect(fs.readFileSync(path.join(local, 'down.txt'), 'utf8')).toBe('made remotely\n');
      } finally {
        fs.rmSync(local, { recursive: true, force: true });
      }

      expect(await ssh.stat(target, `${base}/missing`)).toBeNull();
      const err = await expectSshError(ssh.readFile(target, `${base}/missing`), 'sftp_failed');
      expect(err.message).toBe(`read ${base}/missing on 127.0.0.1:${sshd.port} failed: no such file or directory`);
      await ssh.exec(target, `rm -rf ${base}`);
    });
  });

  describe('host keys', () => {
    it('pins by the SHA-256 fingerprint ssh-keygen prints, and trusts on first use once', async () => {
      const client = createSshClient();
      const seen: PresentedHostKey[] = [];
      const tofu = targetOf(sshd, {
        hostKeyFingerprint: undefined,
        onFirstHostKey: (key) => {
          seen.push(key);
        },
      });
      try {
        expect((await client.hostKey(target)).fingerprint).toBe(sshd.hostKeyFingerprint);
        await client.exec(tofu, 'true');
        expect(seen).toHaveLength(1);
        expect(seen[0]!.fingerprint).toBe(sshd.hostKeyFingerprint);
        expect(seen[0]!.publicKey).toMatch(/^ssh-ed25519 AAAA[0-9A-Za-z+/=]+$/);
        sshd.dropConnections();
        await new Promise((r) => setTimeout(r, 100));
        await client.exec(tofu, 'true');
        expect(seen).toHaveLength(1);
      } finally {
        await client.close();
      }
    });

    it('refuses a machine with no pinned key and no trust-on-first-use callback', async () => {
      const client = createSshClient();
      try {
        const err = await expectSshError(client.exec(targetOf(sshd, { hostKeyFingerprint: undefined }), 'true'), 'host_key_mismatch');
        expect(err.message).toContain(sshd.hostKeyFingerprint);
        const refused = await expectSshError(
          client.exec(targetOf(sshd, { hostKeyFingerprint: undefined, onFirstHostKey: () => false }), 'true'),
          'host_key_mismatch',
        );
        expect(refused.message).toContain('refused by the caller');
      } finally {
        await client.close();
      }
    });

    it('refuses and reports a changed host key, pinned or trusted on first use', async () => {
      const server = await startSshd();
      const client = createSshClient();
      let firstUse = 0;
      const pinned = targetOf(server);
      const tofu = targetOf(server, { hostKeyFingerprint: undefined, onFirstHostKey: () => void firstUse++ });
      try {
        await client.exec(pinned, 'true');
        await client.exec(tofu, 'true');
        const old = server.hostKeyFingerprint;
        server.dropConnections();
        await server.restart({ newHostKey: true });
        expect(server.hostKeyFingerprint).not.toBe(old);

        const err = await expectSshError(client.exec(pinned, 'true'), 'host_key_mismatch');
        expect(err).toMatchObject({ expected: old, presented: server.hostKeyFingerprint, host: '127.0.0.1', port: server.port });
        expect(err.message).toContain(`cannot connect to 127.0.0.1:${server.port}: host key mismatch: expected ${old}`);
        const again = await expectSshError(client.exec(tofu, 'true'), 'host_key_mismatch');
        expect(again).toMatchObject({ expected: old, presented: server.hostKeyFingerprint });
        expect(firstUse).toBe(1);
      } finally {
        await client.close();
        await server.stop();
      }
    });
  });

  describe('failures name the machine and the cause', () => {
    it('speaks SSH over a stream the target dials itself (the agent tunnel hook)', async () => {
      let dialed = 0;
      const tunnel: SshTarget = {
        ...target,
        host: 'machine-behind-nat.invalid',
        dial: async () => {
          dialed++;
          return net.connect({ host: sshd.host, port: sshd.port });
        },
      };
      expect((await ssh.exec(tunnel, 'echo via tunnel')).stdout).toBe('via tunnel\n');
      expect(dialed).toBe(1);
      const client = createSshClient();
      try {
        const err = await expectSshError(client.exec({ ...tunnel, dial: async () => Promise.reject(new Error('agent offline')) }, 'true'), 'unreachable');
        expect(err.message).toBe(`cannot connect to machine-behind-nat.invalid:${sshd.port}: agent offline`);
      } finally {
        await client.close();
      }
    });

    it('a closed port is unreachable: connection refused', async () => {
      const server = await startSshd();
      const port = server.port;
      await server.stop();
      const err = await expectSshError(ssh.exec({ ...target, port }, 'true'), 'unreachable');
      expect(err.message).toBe(`cannot connect to 127.0.0.1:${port}: connection refused`);
    });

    it('a key the machine does not know fails authentication', async () => {
      const stranger = generateKeyPair();
      const err = await expectSshError(ssh.exec({ ...target, privateKey: stranger.privateKey }, 'true'), 'auth_failed');
      expect(err.message).toMatch(new RegExp(`^cannot connect to 127\\.0\\.0\\.1:${sshd.port}: authentication as "${sshd.username}" failed`));
    });

    it('a connection dropped mid-command is connection_lost, and the next command reconnects', async () => {
      const client = createSshClient();
      try {
        await client.exec(target, 'true');
        const call = client.exec(target, 'echo started; sleep 10; echo never', {
          onStdout: () => sshd.dropConnections(),
        });
        const err = await expectSshError(call, 'connection_lost');
        expect(err.message).toMatch(new RegExp(`^connection to 127\\.0\\.0\\.1:${sshd.port} lost: `));
        expect((await client.exec(target, 'echo back')).stdout).toBe('back\n');
        expect(client.stats().opened).toBe(2);
      } finally {
        await client.close();
      }
    });

    it('closes idle connections and reopens on demand', async () => {
      const client = createSshClient({ idleTimeoutMs: 150 });
      try {
        await client.exec(target, 'true');
        expect(client.stats().connections).toBe(1);
        await new Promise((r) => setTimeout(r, 400));
        expect(client.stats().connections).toBe(0);
        expect((await client.exec(target, 'echo again')).stdout).toBe('again\n');
        expect(client.stats()).toMatchObject({ connections: 1, opened: 2 });
      } finally {
        await client.close();
      }
    });

    it('after close(), calls fail with connection_lost', async () => {
      const client = createSshClient();
      await client.exec(target, 'true');
      await client.close();
      expect(client.stats().connections).toBe(0);
      await expectSshError(client.exec(target, 'true'), 'connection_lost');
    });
  });

  describe('identity', () => {
    it('reads /etc/machine-id as a UUID', async () => {
      expect(await ssh.machineId(target)).toBe(hexToUuid(sshd.machineId));
      expect(hexToUuid('3d1219c7c4c5404aaa1f6d2a48adfda4')).toBe('3d1219c7-c4c5-404a-aa1f-6d2a48adfda4');
      expect(hexToUuid('00000000000000000000000000000000')).toBe('00000000-0000-8000-8000-000000000000');
    });

    it('generates an ed25519 key pair whose public line authorizes it', async () => {
      const pair = generateKeyPair('org_123@agentplane');
      expect(pair.publicKey).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5[0-9A-Za-z+/]+ org_123@agentplane$/);
      expect(publicKeyOf(pair.privateKey)).toEqual({ publicKey: pair.publicKey.replace(/ org_123@agentplane$/, ''), fingerprint: pair.fingerprint });
      sshd.authorizeKey(pair.publicKey);
      expect((await ssh.exec({ ...target, privateKey: pair.privateKey }, 'whoami')).stdout).toBe(`${sshd.username}\n`);
    });

    it('encodes a public key that starts with a zero byte (ssh2 drops it: one key in 256)', async () => {
      let seed = 0;
      let pair = ed25519KeyPair(Buffer.alloc(32, 0), 'zero');
      const firstByte = (p: { publicKey: string }) => Buffer.from(p.publicKey.split(' ')[1]!, 'base64').at(-32);
      while (firstByte(pair) !== 0) pair = ed25519KeyPair(Buffer.alloc(32, ++seed), 'zero');
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-key-'));
      try {
        fs.writeFileSync(path.join(dir, 'id'), pair.privateKey, { mode: 0o600 });
        // OpenSSH reads the private key and derives the same public key and fingerprint from it.
        expect(execFileSync('ssh-keygen', ['-y', '-f', path.join(dir, 'id')], { encoding: 'utf8' }).trim()).toBe(pair.publicKey);
        expect(execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', path.join(dir, 'id')], { encoding: 'utf8' })).toContain(pair.fingerprint);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
      sshd.authorizeKey(pair.publicKey);
      expect((await ssh.exec({ ...target, privateKey: pair.privateKey }, 'whoami')).stdout).toBe(`${sshd.username}\n`);
    });
  });

  describe.skipIf(noNetns)('a second machine in its own network namespace', () => {
    let machine: TestSshd;
    beforeAll(async () => {
      machine = await startSshd({ netns: true });
    });
    afterAll(async () => {
      await machine?.stop();
    });

    it('is a separate machine, reachable only at its own address', async () => {
      const remote = targetOf(machine);
      expect(remote.host).toMatch(/^10\./);
      const id = await ssh.machineId(remote);
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(id).not.toBe(await ssh.machineId(target));
      expect(id.replaceAll('-', '').slice(0, 12)).toBe(machine.machineId.slice(0, 12));
      // Its sshd is not on this machine's loopback.
      await expectSshError(ssh.exec({ ...remote, host: '127.0.0.1' }, 'true'), 'unreachable');
    });

    it('a black-holed address times out at connect', async () => {
      const client = createSshClient({ connectTimeoutMs: 1_000 });
      try {
        const t0 = Date.now();
        const err = await expectSshError(client.exec({ ...targetOf(machine), host: machine.blackHoleAddress! }, 'true'), 'timeout');
        expect(Date.now() - t0).toBeLessThan(3_000);
        expect(err.message).toBe(`cannot connect to ${machine.blackHoleAddress}:22: no answer within 1000 ms`);
      } finally {
        await client.close();
      }
    });

    it('keepalive notices a silent network, fails the command and reconnects once it is back', async () => {
      const client = createSshClient({ keepaliveIntervalMs: 250, keepaliveCountMax: 2 });
      const remote = targetOf(machine);
      try {
        const call = client.exec(remote, 'echo started; sleep 30', { onStdout: () => machine.cutNetwork() });
        const t0 = Date.now();
        const err = await expectSshError(call, 'connection_lost');
        expect(Date.now() - t0).toBeLessThan(3_000);
        expect(err.message).toContain('Keepalive timeout');
        machine.restoreNetwork();
        expect((await client.exec(remote, 'echo back')).stdout).toBe('back\n');
        expect(client.stats().opened).toBe(2);
      } finally {
        machine.restoreNetwork();
        await client.close();
      }
    });
  });
});
