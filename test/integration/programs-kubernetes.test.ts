import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createEgressGuard } from '../../src/egress/guard.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { pinClone } from '../../src/repos/pinned-clone.ts';
import { ProgramProblem, type ProgramSource } from '../../src/provisioning/programs/index.ts';
import { kubernetesPluginPath } from '../../src/provisioning/providers/kubernetes/index.ts';
import { createProvisioner, type Provisioner } from '../../src/provisioning/provisioner.ts';
import type { StackConfig } from '../../src/provisioning/pulumi/computer-stacks.ts';
import { yamlLanguageHost } from '../../src/provisioning/programs/settings.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { createSshClient, fingerprintOf, generateKeyPair } from '../../src/ssh/index.ts';
import { giteaBinDir, giteaMissing, startGitea, type Gitea } from '../support/gitea.ts';
import { kubeBinDir, sharedKubeCluster, type KubeCluster } from '../support/kube-cluster.ts';
import { startTestKubelet, type TestKubelet } from '../support/kube-kubelet.ts';
import { installClusterNetwork, type ClusterNetwork } from '../support/kube-network.ts';
import { skipWithout } from '../support/parts.ts';
import { REPO_ROOT } from '../support/server-process.ts';
import { isRoot, sshdMissing } from '../support/sshd.ts';

/**
 * The program engine through real parts: the examples' kubernetes program pushed to a Gitea
 * repository, resolved, checked out, inspected, previewed, brought up on the test cluster (the
 * test kubelet runs its pod's sshd, kube-network.ts stands in for DNS and kube-proxy) and reached
 * over SSH with the host key it output, then destroyed; and each kind of bad program refused with
 * a clear ProgramProblem, leaving nothing behind.
 */
const toolchain = locatePulumiToolchain();
const kube = kubeBinDir();
const missing =
  giteaMissing() ??
  kube.missing ??
  (toolchain.available ? undefined : 'the Pulumi CLI is missing (bash scripts/pulumi-toolchain.sh)') ??
  (existsSync(yamlLanguageHost(toolchain)) ? undefined : 'pulumi-language-yaml is missing (bash scripts/pulumi-toolchain.sh)') ??
  (existsSync(kubernetesPluginPath(toolchain.pulumiHome)) ? undefined : 'pulumi-resource-kubernetes is missing (bash scripts/pulumi-toolchain.sh)') ??
  sshdMissing() ??
  (isRoot ? undefined : "the test kubelet runs sshd as the image's user and kube-proxy's port 22: needs root");

// The namespace the example names (the deploy program's computers namespace).
const NAMESPACE = 'agentplane-computers';
const EXAMPLE = 'examples/environments/kubernetes-statefulset';
const log = createLogger({ level: 'silent' });
const signal = new AbortController().signal;

describe.skipIf(skipWithout('the program engine tests', missing))(
  'program engine: a Pulumi YAML program from Gitea on the test cluster',
  { timeout: 240_000 },
  () => {
    let gitea: Gitea;
    let cluster: KubeCluster;
    let network: ClusterNetwork;
    let kubelet: TestKubelet;
    let provisioner: Provisioner;
    let dataDir: string;
    let repository: string;
    let mainCommit: string;

    const source = (p: string, ref = 'main'): ProgramSource => ({ repository, path: p, ref });
    const config = (computerId: string, key: string): StackConfig => ({
      computerId,
      name: 'yaml-box',
      organizationId: 'org_programs',
      authorizedKey: key,
      cpu: 0.5,
      memoryMb: 256,
      diskGb: 1,
      running: true,
    });
    /** Objects of one computer in the namespace, by the label the example puts on each. */
    const objects = async (computerId: string) => {
      const selector = `?labelSelector=${encodeURIComponent(`agentplane.dev/computer-id=${computerId}`)}`;
      const kinds = [
        '/api/v1/namespaces/NS/secrets',
        '/api/v1/namespaces/NS/persistentvolumeclaims',
        '/api/v1/namespaces/NS/services',
        '/apis/apps/v1/namespaces/NS/statefulsets',
      ];
      const found: string[] = [];
      for (const k of kinds)
        for (const item of (await cluster.get(k.replace('NS', NAMESPACE) + selector)).items) found.push(`${k.split('/').pop()}/${item.metadata.name}`);
      return found;
    };

    beforeAll(async () => {
      gitea = await startGitea(giteaBinDir()!);
      const owner = await gitea.createUser('platform');
      const runtime = (r: string) => `name: bad\nruntime: ${r}\nresources: {}\n`;
      const name = await gitea.createRepo(owner, {
        name: 'environments',
        files: {
          [`${EXAMPLE}/Pulumi.yaml`]: readFileSync(path.join(REPO_ROOT, EXAMPLE, 'Pulumi.yaml'), 'utf8'),
          'bad/not-yaml/Pulumi.yaml': 'name: bad\nruntime: yaml\nresources:\n  a: [unclosed\n',
          'bad/nodejs/Pulumi.yaml': runtime('nodejs'),
          'bad/aws/Pulumi.yaml': 'name: bad\nruntime: yaml\nresources:\n  bucket:\n    type: aws:s3:Bucket\n',
          'bad/no-contract/Pulumi.yaml': [
            'name: bad',
            'runtime: {name: yaml}',
            'resources:',
            '  said:',
            '    type: command:local:Command',
            '    properties:',
            `      create: echo hello \${agentplane:name}`,
            'outputs:',
            '  said: ${said.stdout}',
          ].join('\n'),
        },
      });
      repository = `${gitea.url}/${name}.git`;
      mainCommit = (await gitea.api('GET', `/repos/${name}/branches/main`)).body.commit.id;
      await gitea.api('POST', `/repos/${name}/tags`, { as: owner, body: { tag_name: 'v1', target: 'main', message: 'v1' } });

      cluster = await sharedKubeCluster(kube.bin!);
      const ns = await cluster.api('POST', '/api/v1/namespaces', { body: { metadata: { name: NAMESPACE } } });
      if (ns.status !== 201 && ns.status !== 409) throw new Error(`creating namespace ${NAMESPACE}: ${JSON.stringify(ns.body)}`);
      process.env.KUBECONFIG = cluster.kubeconfig;
      network = installClusterNetwork(cluster);
      kubelet = startTestKubelet(cluster, NAMESPACE);

      dataDir = mkdtempSync(path.join(os.tmpdir(), 'agentplane-programs-'));
      const egress = createEgressGuard(loadConfig({ AGENTPLANE_EGRESS_ALLOW: '127.0.0.0/8' }).egress);
      provisioner = createProvisioner(
        loadConfig({ AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_LOCAL_PROVIDER: 'false' }),
        createSecretBox(randomBytes(32)),
        () => 0,
        async (_org, url) => pinClone(url, await egress.check(url)),
      );
    });

    afterAll(async () => {
      await kubelet?.stop();
      await network?.close();
      delete process.env.KUBECONFIG;
      await gitea?.stop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it('resolves a branch, a tag and a full commit id, and names a ref or repository that does not exist', async () => {
      const { programs } = provisioner;
      expect(await programs.resolve('org_programs', source(EXAMPLE), signal)).toBe(mainCommit);
      expect(await programs.resolve('org_programs', source(EXAMPLE, 'v1'), signal)).toBe(mainCommit);
      expect(await programs.resolve('org_programs', source(EXAMPLE, mainCommit), signal)).toBe(mainCommit);
      await expect(programs.resolve('org_programs', source(EXAMPLE, 'nope'), signal)).rejects.toThrow(
        new ProgramProblem(`ref "nope" is neither a branch nor a tag of ${repository}: name an existing branch, tag or full commit id`),
      );
      const gone = programs.resolve('org_programs', { ...source(EXAMPLE), repository: `${gitea.url}/platform/missing.git` }, signal);
      await expect(gone).rejects.toBeInstanceOf(ProgramProblem);
      await expect(gone).rejects.toThrow(/repository .*platform\/missing\.git cannot be read/);
    });

    it('previews the example: the objects it would create, and nothing made on the cluster', async () => {
      const preview = await provisioner.programs.preview('org_programs', source(EXAMPLE), mainCommit, signal);
      expect(preview.ok, JSON.stringify(preview)).toBe(true);
      const creates = preview.ok ? preview.creates.map((o) => `${o.type} ${o.name}`).sort() : [];
      expect(creates).toEqual([
        'command:local:Command hostKey',
        'kubernetes:apps/v1:StatefulSet machine',
        'kubernetes:core/v1:PersistentVolumeClaim home',
        'kubernetes:core/v1:Secret keys',
        'kubernetes:core/v1:Service service',
      ]);
      expect(await objects('cmp_preview0000000000000')).toEqual([]);
      // The scratch stack is gone with its workspace.
      expect(readdirNames(path.join(dataDir, 'pulumi', 'workspaces'))).toEqual([]);
    });

    it('refuses each bad program with a clear problem, before anything runs', async () => {
      const preview = (p: string, commit = mainCommit) => provisioner.programs.preview('org_programs', source(p), commit, signal);
      expect(await preview('bad/missing')).toEqual({
        ok: false,
        error: expect.stringMatching(/path "bad\/missing" does not exist in .* at commit [0-9a-f]{12}/),
      });
      expect(await preview('bad/not-yaml')).toEqual({
        ok: false,
        error: expect.stringMatching(/bad\/not-yaml\/Pulumi\.yaml is not valid YAML \(line \d+, column \d+\)/),
      });
      expect(await preview('bad/nodejs')).toEqual({
        ok: false,
        error: expect.stringContaining('bad/nodejs/Pulumi.yaml: runtime is "nodejs"; agentplane runs Pulumi YAML programs only: set "runtime: yaml"'),
      });
      expect(await preview('bad/aws')).toEqual({
        ok: false,
        error: expect.stringContaining(
          'resources.bucket.type "aws:s3:Bucket" uses provider "aws", which the operator does not allow (allowed: kubernetes, command); use an allowed provider, or ask the operator to install it and add it to AGENTPLANE_PROGRAM_PROVIDERS',
        ),
      });
      expect(await preview('bad/nodejs', 'f'.repeat(40))).toEqual({ ok: false, error: expect.stringContaining(`commit ${'f'.repeat(40)} is not in`) });
    });

    it('brings the example up on the cluster, reachable over SSH with the host key it output, and destroys every object', async () => {
      const computerId = `cmp_yaml${randomBytes(6).toString('hex')}`;
      const key = generateKeyPair('control-plane');
      const program = await provisioner.programs.stackProgram('org_programs', source(EXAMPLE), mainCommit, signal);
      const endpoint = await provisioner.stacks.up(program, config(computerId, key.publicKey), { log, signal, fresh: true });
      const name = computerId.replaceAll('_', '-');
      expect(endpoint).toMatchObject({ kind: 'ssh', host: `${name}.${NAMESPACE}.svc`, port: 22, user: 'agent', pausable: false });
      expect(await objects(computerId)).toEqual([`secrets/${name}-ssh`, `persistentvolumeclaims/${name}-home`, `services/${name}`, `statefulsets/${name}`]);

      if (endpoint.kind !== 'ssh') throw new Error('not ssh');
      const ssh = createSshClient();
      const target = {
        host: endpoint.host,
        port: endpoint.port,
        username: endpoint.user,
        privateKey: key.privateKey,
        hostKeyFingerprint: fingerprintOf(Buffer.from(endpoint.hostKey.split(' ')[1]!, 'base64')),
      };
      const res = await ssh.exec(target, 'id -un');
      expect(res.stdout.trim(), res.stderr).toBe('agent');
      // Another host key than the one output: refused.
      await expect(ssh.exec({ ...target, hostKeyFingerprint: `SHA256:${randomBytes(32).toString('base64').replace(/=+$/, '')}` }, 'true')).rejects.toThrow();
      await ssh.close();

      await provisioner.stacks.destroy(program, config(computerId, key.publicKey), { log, signal });
      expect(await objects(computerId)).toEqual([]);
      expect(existsSync(path.join(dataDir, 'pulumi', 'workspaces', computerId))).toBe(false);
    });

    it('fails an up whose outputs miss the contract with a clear problem; destroy leaves nothing', async () => {
      const computerId = `cmp_nocontract${randomBytes(4).toString('hex')}`;
      const program = await provisioner.programs.stackProgram('org_programs', source('bad/no-contract'), mainCommit, signal);
      const up = provisioner.stacks.up(program, config(computerId, generateKeyPair('x').publicKey), { log, signal, fresh: true });
      await expect(up).rejects.toBeInstanceOf(ProgramProblem);
      await expect(up).rejects.toThrow(
        `the template's program's outputs miss the contract (it output said): a program must output either "ssh: {host, port, user, hostKey}"`,
      );
      await provisioner.stacks.destroy(program, config(computerId, 'k'), { log, signal });
      expect(existsSync(path.join(dataDir, 'pulumi', 'state', '.pulumi', 'stacks', 'agentplane-computers', `${computerId}.json`))).toBe(false);
    });
  },
);

function readdirNames(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}
