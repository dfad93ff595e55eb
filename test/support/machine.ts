import { randomBytes } from 'node:crypto';
import { createSshClient, type SshClient, type SshTarget } from '../../src/ssh/index.ts';
import { sshdMissing, startSshd, type TestSshd } from './sshd.ts';
import { skipWithout } from './parts.ts';

/**
 * A real machine for the machine-side operation tests: a test sshd, a client, and a scratch
 * directory in the remote user's home that is removed afterwards.
 */
export interface TestMachine {
  sshd: TestSshd;
  ssh: SshClient;
  target: SshTarget;
  /** The remote user's home, absolute. */
  home: string;
  /** An empty directory of this machine's own, absolute. */
  scratch: string;
  /** Runs a shell command on the machine and returns stdout; throws with stderr on a non-zero exit. */
  sh(command: string): Promise<string>;
  stop(): Promise<void>;
}

export const machineMissing = sshdMissing();
export const skipMachineTests = skipWithout('the tests on a real machine', machineMissing);

export async function startMachine(): Promise<TestMachine> {
  if (machineMissing) throw new Error(machineMissing);
  const sshd = await startSshd();
  const ssh = createSshClient();
  const target: SshTarget = {
    host: sshd.host,
    port: sshd.port,
    username: sshd.username,
    privateKey: sshd.privateKey,
    hostKeyFingerprint: sshd.hostKeyFingerprint,
  };
  const sh = async (command: string) => {
    const res = await ssh.exec(target, command, { timeoutMs: 60_000 });
    if (res.exitCode !== 0) throw new Error(`remote command failed (exit ${res.exitCode}): ${command}\n${res.stderr}`);
    return res.stdout;
  };
  const home = (await sh('printf %s "$HOME"')).trim();
  const scratch = `${home}/ap-test-${randomBytes(4).toString('hex')}`;
  await sh(`mkdir -p '${scratch}'`);
  return {
    sshd,
    ssh,
    target,
    home,
    scratch,
    sh,
    async stop() {
      await sh(`rm -rf '${scratch}'`).catch(() => {});
      await ssh.close();
      await sshd.stop();
    },
  };
}

/** `git commit` for test repositories, whoever the remote user is. */
export const GIT_COMMIT = 'git -c user.name=Test -c user.email=test@example.com -c commit.gpgsign=false commit -q';
