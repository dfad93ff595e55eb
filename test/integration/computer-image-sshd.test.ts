import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { COMPUTER_IMAGE_CONTRACT as IMAGE } from '../../src/provisioning/providers/kubernetes/index.ts';
import { kubernetesComputerProgram } from '../../src/provisioning/providers/kubernetes/program.ts';
import type { ComputerProgramOutputs } from '../../src/provisioning/providers/types.ts';
import { AuthFailed, createSshClient, fingerprintOf, generateKeyPair, type SshClient } from '../../src/ssh/index.ts';
import { freePort } from '../support/http.ts';
import { isRoot, sshdMissing } from '../support/sshd.ts';
import { REPO_ROOT } from '../support/server-process.ts';
import { waitFor } from '../support/wait.ts';
import { one, secretValue, underMocks } from '../deploy/stack-harness.ts';
import { skipWithout } from '../support/parts.ts';

/**
 * The computer image's start script and sshd config, run for real on this machine as the pod runs
 * them: as uid 1000 (the image's `agent`, in a private mount namespace with the image's passwd
 * entry and home), reading the files of the Secret the program declares, laid out the way the
 * kubelet mounts a Secret with fsGroup (root-owned, group-readable, in a world-writable tmpfs).
 * No container runtime or cluster is needed to check that the program and the image agree.
 */
const why =
  sshdMissing() ??
  (isRoot ? undefined : "running sshd as the image's user needs root") ??
  (spawnSync('unshare', ['--version']).error ? 'unshare (util-linux) not found' : undefined) ??
  (spawnSync('setpriv', ['--version']).error ? 'setpriv (util-linux) not found' : undefined);
const skip = skipWithout('the computer image test', why);

const IMAGE_DIR = path.join(REPO_ROOT, 'images', 'computer');
const computerKey = generateKeyPair('control-plane');

/** The Secret the program declares for one computer, and its outputs. */
async function programSecret(authorizedPublicKey: string) {
  const program = kubernetesComputerProgram(loadConfig({}).kubernetes, Buffer.alloc(32, 9));
  const { resources, result } = await underMocks({}, [], () =>
    program({
      computerId: 'cmp_imagetest00000000000001',
      name: 'image-test',
      organizationId: 'org_imagetest',
      authorizedPublicKey,
      resources: { cpus: 1, memoryMiB: 512, diskGiB: 1 },
      running: true,
    }),
  );
  const data = secretValue(one(resources, 'kubernetes:core/v1:Secret').inputs.stringData) as Record<string, string>;
  const volumes = one(resources, 'kubernetes:apps/v1:StatefulSet').inputs.spec.template.spec.volumes as any[];
  const mode = volumes.find((v) => v.secret).secret.defaultMode as number;
  return { data, mode, outputs: (await result) as ComputerProgramOutputs };
}

describe.skipIf(skip)("computer image: sshd as the computer's user, keys from the Secret", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'computer-image-'));
  let port = 0;
  let sshd: ChildProcess | undefined;
  let stderr = '';
  let ssh: SshClient;
  let outputs: ComputerProgramOutputs;

  /**
   * What the kubelet does with the Secret volume: files owned by root, group fsGroup, the volume's
   * defaultMode (with fsGroup the kubelet may add group read itself; the program does not rely on it).
   */
  function mountSecret({ data, mode }: { data: Record<string, string>; mode: number }) {
    const dir = path.join(root, 'secrets');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
    chmodSync(dir, 0o1777);
    for (const [file, content] of Object.entries(data)) {
      writeFileSync(path.join(dir, file), content);
      chownSync(path.join(dir, file), 0, IMAGE.uid);
      chmodSync(path.join(dir, file), mode);
    }
  }

  async function startComputer(): Promise<void> {
    const script = [
      'set -e',
      // The image's passwd and group over the host's /etc as a read-only overlay layer, as the test
      // kubelet does: a bind mount on /etc/passwd itself is bypassed as soon as useradd elsewhere on
      // the host (the local provider's tests) renames a new file there.
      `mount -t overlay overlay -o lowerdir=${root}/etc:/etc /etc`,
      `mount --bind ${root}/home /home`,
      `exec setpriv --reuid ${IMAGE.uid} --regid ${IMAGE.uid} --clear-groups env -i PATH=/usr/local/bin:/usr/bin:/bin ` +
        `HOME=${IMAGE.home} AGENTPLANE_SECRETS_DIR=${root}/secrets AGENTPLANE_SSH_DIR=/home/.ssh-run ` +
        `SSHD_CONFIG=${root}/sshd_config /bin/sh ${root}/computer-start.sh`,
    ].join('\n');
    stderr = '';
    sshd = spawn('unshare', ['--mount', '--propagation', 'private', '/bin/sh', '-c', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    sshd.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const child = sshd;
    await waitFor(
      () => `sshd on port ${port}: ${stderr}`,
      () => {
        if (child.exitCode !== null) throw new Error(`computer-start exited ${child.exitCode}: ${stderr}`);
        return new Promise<boolean>((resolve) => {
          const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
          s.on('error', () => resolve(false));
        });
      },
    );
  }

  async function stopComputer(): Promise<void> {
    const child = sshd;
    if (!child || child.exitCode !== null) return;
    await new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGTERM');
    });
  }

  const target = (privateKey: string) => {
    const blob = Buffer.from(String(outputs.ssh.hostKey).split(' ')[1]!, 'base64');
    return { host: '127.0.0.1', port, username: String(outputs.ssh.user), privateKey, hostKeyFingerprint: fingerprintOf(blob) };
  };

  beforeAll(async () => {
    chmodSync(root, 0o755);
    port = await freePort('127.0.0.1');
    // The image's passwd entry and home; the host's /etc and /home stay untouched outside the namespace.
    mkdirSync(path.join(root, 'etc'));
    writeFileSync(
      path.join(root, 'etc', 'passwd'),
      `root:x:0:0:root:/root:/bin/bash\n${IMAGE.username}:*:${IMAGE.uid}:${IMAGE.uid}::${IMAGE.home}:/bin/bash\n`,
    );
    writeFileSync(path.join(root, 'etc', 'group'), `root:x:0:\n${IMAGE.username}:x:${IMAGE.uid}:\n`);
    mkdirSync(path.join(root, 'home', path.basename(IMAGE.home)), { recursive: true });
    mkdirSync(path.join(root, 'home', '.ssh-run'), { mode: 0o700 });
    chownSync(path.join(root, 'home', path.basename(IMAGE.home)), IMAGE.uid, IMAGE.uid);
    chownSync(path.join(root, 'home', '.ssh-run'), IMAGE.uid, IMAGE.uid);
    // Debian's sshd_config, as in the image, including only the image's drop-in and listening here.
    mkdirSync(path.join(root, 'sshd_config.d'));
    copyFileSync(path.join(IMAGE_DIR, 'sshd_config'), path.join(root, 'sshd_config.d', 'agentplane.conf'));
    const debian = readFileSync('/etc/ssh/sshd_config', 'utf8');
    if (!/^Include \/etc\/ssh\/sshd_config\.d\/\*\.conf$/m.test(debian))
      throw new Error("/etc/ssh/sshd_config does not include sshd_config.d as Debian's does");
    writeFileSync(path.join(root, 'sshd_config'), debian.replace(/^Include .*$/m, `ListenAddress 127.0.0.1:${port}\nInclude ${root}/sshd_config.d/*.conf`));
    copyFileSync(path.join(IMAGE_DIR, 'computer-start.sh'), path.join(root, 'computer-start.sh'));
    const secret = await programSecret(computerKey.publicKey);
    outputs = secret.outputs;
    mountSecret(secret);
    ssh = createSshClient();
    await startComputer();
  });

  afterAll(async () => {
    await ssh?.close();
    await stopComputer();
    rmSync(root, { recursive: true, force: true });
  });

  it("logs the computer's key in as the image's user, presenting the host key the program output", async () => {
    const res = await ssh.exec(target(computerKey.privateKey), 'id -u; id -un; echo "$HOME"; test -f ~/.profile && echo dotfiles');
    expect(res.exitCode).toBe(0);
    expect(res.stdout.split('\n').filter(Boolean)).toEqual([String(IMAGE.uid), IMAGE.username, IMAGE.home, 'dotfiles']);
  });

  it('serves SFTP in the home', async () => {
    await ssh.writeFile(target(computerKey.privateKey), `${IMAGE.home}/hello.txt`, 'hi');
    expect((await ssh.readFile(target(computerKey.privateKey), `${IMAGE.home}/hello.txt`)).toString()).toBe('hi');
  });

  it('refuses any other key', async () => {
    await expect(ssh.exec(target(generateKeyPair().privateKey), 'true')).rejects.toBeInstanceOf(AuthFailed);
  });

  it('after a restart with a new key in the Secret, takes only the new key and keeps the host key and the home', async () => {
    const rotated = generateKeyPair('rotated');
    const before = outputs.ssh.hostKey;
    const secret = await programSecret(rotated.publicKey);
    expect(secret.outputs.ssh.hostKey).toBe(before);
    await stopComputer();
    mountSecret(secret);
    await startComputer();
    await ssh.close();
    ssh = createSshClient();
    const res = await ssh.exec(target(rotated.privateKey), `cat ${IMAGE.home}/hello.txt`);
    expect(res.stdout).toBe('hi');
    await expect(ssh.exec(target(computerKey.privateKey), 'true')).rejects.toBeInstanceOf(AuthFailed);
  });
});
