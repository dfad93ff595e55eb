import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { COMPUTER_IMAGE_CONTRACT as IMAGE } from '../../src/provisioning/providers/kubernetes/index.ts';
import type { KubeCluster } from './kube-cluster.ts';
import { toLoopback } from './kube-network.ts';
import { REPO_ROOT } from './server-process.ts';

const IMAGE_DIR = path.join(REPO_ROOT, 'images', 'computer');
/** Where the image's computer-start.sh installs the Secret's keys for sshd (its AGENTPLANE_SSH_DIR default). */
const IMAGE_SSH_DIR = '/var/lib/agentplane/ssh';

/**
 * The kubelet's one job that matters to the kubernetes provider's tests, for computer pods kwok has
 * made Running: start the computer image's own start script and sshd (as uid 1000 in a private
 * mount namespace with the image's passwd entry and home, as computer-image-sshd.test.ts does) with
 * the files of the Secret the pod mounts, read from the API server, on the pod's address moved into
 * loopback (kube-network.ts) and the container's port. The home is a directory per volume claim
 * (by its bound volume), so a pod started again on the same claim finds the same files. Pods that
 * are gone or terminating get their sshd stopped. Needs root.
 */
export interface TestKubelet {
  /** Pod name → the pod's sshd, while it runs. */
  readonly running: ReadonlyMap<string, { podIP: string; claim: string }>;
  /** What the pods' computer-start and sshd wrote to stderr (sshd logs there with -e). */
  logs(): string;
  /** The home directory kept for a claim's volume. */
  homeOf(volumeName: string): string;
  stop(): Promise<void>;
}

export function startTestKubelet(cluster: KubeCluster, namespace: string): TestKubelet {
  // Its own directory straight under the temporary directory: uid 1000 must reach every parent.
  const root = mkdtempSync(path.join(os.tmpdir(), 'agentplane-kubelet-'));
  const pods = new Map<string, { podIP: string; uid: string; claim: string; child: ChildProcess; stderr: string }>();
  const running = new Map<string, { podIP: string; claim: string }>();
  chmodSync(root, 0o755);
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(path.join(root, 'etc', 'passwd'), `root:x:0:0:root:/root:/bin/bash\n${IMAGE.username}:*:${IMAGE.uid}:${IMAGE.uid}::${IMAGE.home}:/bin/bash\n`);
  writeFileSync(path.join(root, 'etc', 'group'), `root:x:0:\n${IMAGE.username}:x:${IMAGE.uid}:\n`);
  mkdirSync(path.join(root, 'var-lib', path.relative('/var/lib', IMAGE_SSH_DIR)), { recursive: true });
  mkdirSync(path.join(root, 'sshd_config.d'), { recursive: true });
  copyFileSync(path.join(IMAGE_DIR, 'sshd_config'), path.join(root, 'sshd_config.d', 'agentplane.conf'));
  copyFileSync(path.join(IMAGE_DIR, 'computer-start.sh'), path.join(root, 'computer-start.sh'));
  const debianConfig = readFileSync('/etc/ssh/sshd_config', 'utf8');

  const homeOf = (volumeName: string) => path.join(root, 'volumes', volumeName);

  async function start(pod: any): Promise<void> {
    const name = pod.metadata.name as string;
    const podIP = pod.status.podIP as string;
    const dir = path.join(root, 'pods', pod.metadata.uid);
    const spec = pod.spec;
    const container = spec.containers[0];
    const sshPort = container.ports.find((p: any) => p.name === 'ssh').containerPort as number;
    const fsGroup = spec.securityContext.fsGroup as number;
    // The Secret volume, as the kubelet lays it out with fsGroup: root-owned files, group fsGroup, defaultMode.
    const secretVolume = spec.volumes.find((v: any) => v.secret);
    const secret = await cluster.get(`/api/v1/namespaces/${namespace}/secrets/${secretVolume.secret.secretName}`);
    const secretsDir = path.join(dir, 'secrets');
    mkdirSync(secretsDir, { recursive: true });
    chmodSync(secretsDir, 0o1777);
    for (const [file, b64] of Object.entries(secret.data as Record<string, string>)) {
      writeFileSync(path.join(secretsDir, file), Buffer.from(b64, 'base64'));
      chownSync(path.join(secretsDir, file), 0, fsGroup);
      chmodSync(path.join(secretsDir, file), secretVolume.secret.defaultMode);
    }
    // The home volume: the claim's bound volume, kept across pods.
    const claimName = spec.volumes.find((v: any) => v.persistentVolumeClaim).persistentVolumeClaim.claimName as string;
    const claim = await cluster.get(`/api/v1/namespaces/${namespace}/persistentvolumeclaims/${claimName}`);
    if (claim.status?.phase !== 'Bound') throw new Error(`claim ${claimName} is ${claim.status?.phase}, not Bound`);
    const home = homeOf(claim.spec.volumeName);
    const homes = path.join(dir, 'home');
    mkdirSync(homes, { recursive: true });
    // The image's key directory (computer-start.sh's default, agent-owned in the Dockerfile), per pod
    // as in a container's own filesystem: a warm pool's claim rewrites the key there too.
    const sshRun = path.join(dir, 'ssh-run');
    mkdirSync(sshRun, { mode: 0o700 });
    chownSync(sshRun, spec.securityContext.runAsUser, fsGroup);
    if (!existsSync(home)) {
      mkdirSync(home, { recursive: true });
      chownSync(home, spec.securityContext.runAsUser, fsGroup);
    }
    writeFileSync(
      path.join(dir, 'sshd_config'),
      debianConfig.replace(/^Include .*$/m, `ListenAddress ${toLoopback(podIP)}:${sshPort}\nInclude ${root}/sshd_config.d/*.conf`),
    );
    const script = [
      'set -e',
      // The image's passwd and group over the host's /etc as a read-only overlay layer: a bind mount on
      // /etc/passwd itself is bypassed as soon as useradd elsewhere on the host renames a new file there.
      `mount -t overlay overlay -o lowerdir=${root}/etc:/etc /etc`,
      `mount -t overlay overlay -o lowerdir=${root}/var-lib:/var/lib /var/lib`,
      `mount --bind ${sshRun} ${IMAGE_SSH_DIR}`,
      `mount --bind ${homes} /home`,
      `mkdir -p ${IMAGE.home}`,
      `mount --bind ${home} ${IMAGE.home}`,
      // Not exec: this root shell stays the namespace's init, keeping --kill-child's parent-death
      // signal (setpriv's change of user clears it), so its death takes sshd and its sessions along.
      `setpriv --reuid ${spec.securityContext.runAsUser} --regid ${spec.securityContext.runAsGroup} --clear-groups env -i PATH=/usr/local/bin:/usr/bin:/bin ` +
        `HOME=${IMAGE.home} AGENTPLANE_SECRETS_DIR=${secretsDir} ` +
        `SSHD_CONFIG=${dir}/sshd_config /bin/sh ${root}/computer-start.sh`,
    ].join('\n');
    // Its own PID namespace too: stopping the pod ends every process in it, SSH sessions included,
    // as a container runtime does (sshd's session processes outlive its listener otherwise).
    const child = spawn('unshare', ['--mount', '--propagation', 'private', '--pid', '--fork', '--kill-child', '/bin/sh', '-c', script], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const entry = { podIP, uid: pod.metadata.uid as string, claim: claimName, child, stderr: '' };
    child.stderr!.on('data', (d: Buffer) => (entry.stderr += d.toString()));
    pods.set(name, entry);
    // Up once sshd accepts connections on the pod's address.
    for (let i = 0; i < 200 && !exited(child); i++) {
      const up = await new Promise<boolean>((resolve) => {
        const s = net.connect(sshPort, toLoopback(podIP), () => (s.destroy(), resolve(true)));
        s.on('error', () => resolve(false));
      });
      if (up) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (exited(child)) throw new Error(`computer-start for pod ${name} exited ${child.exitCode ?? child.signalCode}: ${entry.stderr}`);
    running.set(name, { podIP, claim: claimName });
  }

  async function stopPod(name: string): Promise<void> {
    const entry = pods.get(name);
    pods.delete(name);
    running.delete(name);
    if (!entry) return;
    if (!exited(entry.child)) {
      await new Promise((resolve) => {
        entry.child.once('exit', resolve);
        // unshare --fork ignores SIGTERM; SIGKILL makes --kill-child end the namespace's init, and with it the rest.
        entry.child.kill('SIGKILL');
      });
    }
    rmSync(path.join(root, 'pods', entry.uid), { recursive: true, force: true });
  }

  // A test process that ends without stop() (a timed-out hook) must not leave sshds on pod addresses.
  const onExit = () => {
    for (const entry of pods.values()) entry.child.kill('SIGKILL');
  };
  process.on('exit', onExit);
  let stopped = false;
  const errors: string[] = [];
  const loop = (async () => {
    while (!stopped) {
      try {
        const list = await cluster.get(
          `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent('app.kubernetes.io/name=agentplane-computer')}`,
        );
        const live = new Map<string, any>();
        for (const pod of list.items) {
          if (pod.metadata.deletionTimestamp || pod.status?.phase !== 'Running' || !pod.status?.podIP) continue;
          live.set(pod.metadata.name, pod);
        }
        for (const [name, entry] of pods) {
          if (live.get(name)?.metadata.uid !== entry.uid) await stopPod(name);
        }
        for (const [name, pod] of live) {
          if (!pods.has(name)) await start(pod);
        }
      } catch (err) {
        errors.push(String(err));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  return {
    running,
    homeOf,
    logs: () => [...pods].map(([name, e]) => `--- ${name}\n${e.stderr}`).join('\n'),
    async stop() {
      stopped = true;
      await loop;
      process.off('exit', onExit);
      await Promise.all([...pods.keys()].map(stopPod));
      rmSync(root, { recursive: true, force: true });
      if (errors.length) console.warn(`test kubelet errors:\n${[...new Set(errors)].join('\n')}`);
    },
  };
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;
