import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import k8s from '@pulumi/kubernetes';
import { LocalWorkspace, type PulumiFn, type Stack } from '@pulumi/pulumi/automation/index.js';
import { loadConfig } from '../../src/config.ts';
import { createKubernetesProvider, missingPrerequisites } from '../../src/provisioning/providers/kubernetes/index.ts';
import type { ComputerProgramInput } from '../../src/provisioning/providers/types.ts';
import { engineEnv, pulumiCommand } from '../../src/provisioning/pulumi/engine-env.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { createSshClient, fingerprintOf, generateKeyPair } from '../../src/ssh/index.ts';
import { freePort } from '../support/http.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The kubernetes provider on a real cluster of your own, with real pods and images: only when
 * KUBECONFIG names one (skipped otherwise, CI included; CI runs test/e2e/computers-kubernetes.test.ts
 * on the kwok test cluster instead). It needs
 * the kubernetes plugin, kubectl (for a port-forward to the computer's sshd) and
 * AGENTPLANE_K8S_COMPUTER_IMAGE, an images/computer build the cluster can pull.
 */
const kubeconfig = process.env.KUBECONFIG;
if (!kubeconfig) console.warn('skipping the kubernetes cluster test: KUBECONFIG is not set');

function kubectl(...args: string[]): string {
  const res = spawnSync('kubectl', args, { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${res.stderr || res.error?.message}`);
  return res.stdout.trim();
}

describe.skipIf(!kubeconfig)('kubernetes provider on a real cluster (KUBECONFIG)', () => {
  it('creates a reachable computer, pauses and resumes it with its home, and destroys every object', { timeout: 900_000 }, async () => {
    const toolchain = locatePulumiToolchain();
    const missing = await missingPrerequisites(toolchain);
    if (spawnSync('kubectl', ['version', '--client']).error) missing.push('kubectl is not on PATH');
    if (!process.env.AGENTPLANE_K8S_COMPUTER_IMAGE) missing.push('AGENTPLANE_K8S_COMPUTER_IMAGE: an images/computer build the cluster can pull');
    if (missing.length) throw new Error(`KUBECONFIG is set, but: ${missing.join('; ')}`);

    const dir = await mkdtemp(path.join(os.tmpdir(), 'agentplane-k8s-computer-'));
    const suffix = randomBytes(4).toString('hex');
    const namespace = `agentplane-test-${suffix}`;
    const settings = { ...loadConfig(process.env).kubernetes, namespace };
    const provider = createKubernetesProvider({ settings, hostKeySecret: randomBytes(32), toolchain });
    const key = generateKeyPair('control-plane');
    const input: ComputerProgramInput = {
      computerId: `cmp_test${suffix}`,
      name: 'cluster-test',
      organizationId: 'org_clustertest',
      authorizedPublicKey: key.publicKey,
      resources: { cpus: 0.5, memoryMiB: 512, diskGiB: 1 },
      running: true,
    };
    const stackOf = async (name: string, program: PulumiFn): Promise<Stack> =>
      LocalWorkspace.createOrSelectStack(
        { projectName: 'agentplane-k8s-test', stackName: name, program },
        {
          workDir: dir,
          pulumiCommand: await pulumiCommand(toolchain),
          envVars: engineEnv({ backendUrl: pathToFileURL(dir).href, passphrase: 'k8s-test', toolchain }),
        },
      );
    // The deploy program creates the computers' namespace; here a stack of its own stands in for it.
    const nsStack = await stackOf('namespace', async () => {
      new k8s.core.v1.Namespace('ns', { metadata: { name: namespace } });
    });
    let running = true;
    const computer = await stackOf('computer', async () => provider.program({ ...input, running }));
    const ssh = createSshClient();
    let forward: ChildProcess | undefined;
    try {
      await nsStack.up();
      const up = await computer.up();
      expect(up.summary.result).toBe('succeeded');
      const out = up.outputs.ssh!.value as { host: string; port: number; user: string; hostKey: string };
      const service = `cmp-test${suffix}`;
      expect(out.host).toBe(`${service}.${namespace}.svc`);

      // The control plane reaches `host` from inside the cluster; from here, through a port-forward.
      const sshTo = async () => {
        const port = await freePort('127.0.0.1');
        forward = spawn('kubectl', ['-n', namespace, 'port-forward', `svc/${service}`, `${port}:${out.port}`], { stdio: 'ignore' });
        const blob = Buffer.from(out.hostKey.split(' ')[1]!, 'base64');
        const target = { host: '127.0.0.1', port, username: out.user, privateKey: key.privateKey, hostKeyFingerprint: fingerprintOf(blob) };
        return waitFor(
          'ssh through the port-forward',
          () => ssh.exec(target, 'id -un; cat ~/kept 2>/dev/null; echo data > ~/kept').catch(() => undefined),
          120_000,
          1000,
        );
      };
      const first = await sshTo();
      expect(first.stdout.trim()).toBe(out.user);
      forward?.kill();

      running = false;
      await computer.up();
      expect(kubectl('-n', namespace, 'get', 'statefulset', service, '-o', 'jsonpath={.spec.replicas}')).toBe('0');
      running = true;
      await computer.up();
      const resumed = await sshTo();
      expect(resumed.stdout.trim().split('\n')).toEqual([out.user, 'data']);
      forward?.kill();

      await computer.destroy();
      // The claim is not waited on (skipAwait): it goes once the pod has, moments later.
      const objects = ['statefulsets,services,secrets,persistentvolumeclaims,pods', '-l', `agentplane.dev/computer-id=${input.computerId}`];
      await waitFor(
        () => `nothing left: ${kubectl('-n', namespace, 'get', ...objects, '-o', 'name')}`,
        () => kubectl('-n', namespace, 'get', ...objects, '-o', 'name') === '',
        120_000,
        2000,
      );
    } finally {
      forward?.kill();
      await ssh.close();
      await computer.destroy().catch(() => undefined);
      await nsStack.destroy().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
