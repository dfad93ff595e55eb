import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { kubernetesComputerProgram } from '../../src/provisioning/providers/kubernetes/program.ts';
import { ComputerInputError } from '../../src/provisioning/providers/kubernetes/input.ts';
import { COMPUTER_IMAGE_CONTRACT as IMAGE } from '../../src/provisioning/providers/kubernetes/index.ts';
import type { ComputerProgramInput, ComputerProgramOutputs } from '../../src/provisioning/providers/types.ts';
import { generateKeyPair, publicKeyOf } from '../../src/ssh/keys.ts';
import { byType, one, secretValue, underMocks, type Registered } from '../deploy/stack-harness.ts';

const K = {
  provider: 'pulumi:providers:kubernetes',
  sts: 'kubernetes:apps/v1:StatefulSet',
  svc: 'kubernetes:core/v1:Service',
  secret: 'kubernetes:core/v1:Secret',
  pvc: 'kubernetes:core/v1:PersistentVolumeClaim',
};

// Settings come through the real configuration path: the env vars an operator sets.
const settings = loadConfig({
  AGENTPLANE_COMPUTERS_NAMESPACE: 'team-computers',
  AGENTPLANE_K8S_COMPUTER_IMAGE: 'registry.example.com/agentplane-computer:1.2.3',
  AGENTPLANE_K8S_IMAGE_PULL_POLICY: 'Always',
  AGENTPLANE_K8S_STORAGE_CLASS: 'fast-ssd',
  AGENTPLANE_K8S_CPU_REQUEST_FRACTION: '0.25',
  AGENTPLANE_K8S_MEMORY_REQUEST_FRACTION: '0.5',
}).kubernetes;
const hostKeySecret = Buffer.alloc(32, 42);
const clientKey = generateKeyPair('cmp_k8stest000000000000001');

const input: ComputerProgramInput = {
  computerId: 'cmp_k8stest000000000000001',
  name: 'build box #1',
  organizationId: 'org_acme000000000000000001',
  authorizedPublicKey: clientKey.publicKey,
  resources: { cpus: 2, memoryMiB: 4096, diskGiB: 30 },
  running: true,
};

async function run(i: ComputerProgramInput = input, s = settings) {
  const { resources, result } = await underMocks({}, [], () => kubernetesComputerProgram(s, hostKeySecret)(i));
  return { resources, outputs: await result };
}

const resolve = <T>(v: unknown) =>
  typeof (v as { apply?: unknown })?.apply === 'function'
    ? new Promise<T>((r) => (v as { apply: (f: (x: T) => void) => unknown }).apply(r))
    : Promise.resolve(v as T);
const podSpec = (sts: Registered) => sts.inputs.spec.template.spec;
const container = (sts: Registered) => podSpec(sts).containers[0];

describe('kubernetes computer program', async () => {
  const { resources, outputs } = await run();
  const sts = one(resources, K.sts);
  const svc = one(resources, K.svc);
  const secret = one(resources, K.secret);
  const pvc = one(resources, K.pvc);

  it('declares exactly a provider, a Secret, a volume claim, a Service and a StatefulSet, named after the computer', () => {
    expect(resources.map((r) => r.type).sort()).toEqual([K.provider, K.sts, K.pvc, K.secret, K.svc].sort());
    expect(sts.inputs.metadata.name).toBe('cmp-k8stest000000000000001');
    expect(svc.inputs.metadata.name).toBe('cmp-k8stest000000000000001');
    expect(secret.inputs.metadata.name).toBe('cmp-k8stest000000000000001-ssh');
    expect(pvc.inputs.metadata.name).toBe('cmp-k8stest000000000000001-home');
    for (const r of [sts, svc, secret, pvc]) expect(r.inputs.metadata.namespace).toBe('team-computers');
  });

  it('labels every object with the computer and its organization, and annotates the name', () => {
    for (const r of [sts, svc, secret, pvc]) {
      expect(r.inputs.metadata.labels).toMatchObject({
        'agentplane.dev/computer-id': 'cmp_k8stest000000000000001',
        'agentplane.dev/organization-id': 'org_acme000000000000000001',
        'app.kubernetes.io/managed-by': 'agentplane',
      });
      expect(r.inputs.metadata.annotations['agentplane.dev/computer-name']).toBe('build box #1');
    }
  });

  it("the Service selects exactly the StatefulSet's pods and maps port 22 to sshd", () => {
    const selector = sts.inputs.spec.selector.matchLabels;
    expect(svc.inputs.spec.selector).toEqual(selector);
    expect(sts.inputs.spec.template.metadata.labels).toMatchObject(selector);
    expect(selector['agentplane.dev/computer-id']).toBe(input.computerId);
    expect(svc.inputs.spec.type).toBe('ClusterIP');
    expect(svc.inputs.spec.ports).toEqual([{ name: 'ssh', port: 22, targetPort: 'ssh', protocol: 'TCP' }]);
    expect(container(sts).ports).toEqual([{ name: 'ssh', containerPort: IMAGE.sshPort, protocol: 'TCP' }]);
    expect(sts.inputs.spec.serviceName).toBe(svc.inputs.metadata.name);
    // Not waited on: a paused computer has no endpoints, and none exist before the pod does.
    expect(svc.inputs.metadata.annotations['pulumi.com/skipAwait']).toBe('true');
  });

  it('puts the home on a claim of the requested size in the configured StorageClass', () => {
    expect(pvc.inputs.spec.resources.requests.storage).toBe('30Gi');
    expect(pvc.inputs.spec.storageClassName).toBe('fast-ssd');
    expect(pvc.inputs.spec.accessModes).toEqual(['ReadWriteOnce']);
    // Not waited on: a WaitForFirstConsumer claim binds only once the StatefulSet's pod exists.
    expect(pvc.inputs.metadata.annotations['pulumi.com/skipAwait']).toBe('true');
    expect(podSpec(sts).volumes).toContainEqual({ name: 'home', persistentVolumeClaim: { claimName: pvc.inputs.metadata.name } });
    expect(container(sts).volumeMounts).toContainEqual({ name: 'home', mountPath: IMAGE.home });
    expect(sts.dependencies).toContain(pvc.urn);
  });

  it('mounts the Secret where computer-start reads the authorized key and the host key it outputs', () => {
    const data = secretValue(secret.inputs.stringData);
    expect(data[IMAGE.authorizedKeysFile]).toBe(`${clientKey.publicKey}\n`);
    expect(outputs.ssh.hostKey).toContain(publicKeyOf(data[IMAGE.hostKeyFile]).publicKey);
    expect(podSpec(sts).volumes).toContainEqual({ name: 'ssh', secret: { secretName: secret.inputs.metadata.name, defaultMode: 0o440 } });
    expect(container(sts).volumeMounts).toContainEqual({ name: 'ssh', mountPath: IMAGE.secretsDir, readOnly: true });
    expect(sts.dependencies).toContain(secret.urn);
  });

  it("limits the container to the computer's size and requests the configured share of it", () => {
    expect(container(sts).resources).toEqual({
      requests: { cpu: '500m', memory: '2048Mi' },
      limits: { cpu: '2000m', memory: '4096Mi' },
    });
  });

  it("runs one pod from the configured image as the image's non-root user, without an API token", () => {
    expect(sts.inputs.spec.replicas).toBe(1);
    expect(container(sts).image).toBe('registry.example.com/agentplane-computer:1.2.3');
    expect(container(sts).imagePullPolicy).toBe('Always');
    expect(podSpec(sts).securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: IMAGE.uid, fsGroup: IMAGE.uid });
    expect(container(sts).securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(podSpec(sts).automountServiceAccountToken).toBe(false);
    expect(container(sts).readinessProbe.tcpSocket).toEqual({ port: 'ssh' });
  });

  it("outputs how to reach sshd: the Service's cluster name, port 22, the image's user, the host key", async () => {
    expect(await resolve(outputs.ssh.host)).toBe('cmp-k8stest000000000000001.team-computers.svc');
    expect(outputs.ssh.port).toBe(22);
    expect(outputs.ssh.user).toBe(IMAGE.username);
    expect(outputs.ssh.hostKey).toMatch(/^ssh-ed25519 AAAA\S+/);
  });

  it("talks to the kubeconfig's current context unless one is configured", async () => {
    expect(one(resources, K.provider).inputs.context).toBeUndefined();
    const staging = loadConfig({ AGENTPLANE_K8S_CONTEXT: 'staging' }).kubernetes;
    expect(one((await run(input, staging)).resources, K.provider).inputs.context).toBe('staging');
  });
});

describe('kubernetes computer program: pause, keys and settings', () => {
  it('scales to zero when paused and keeps the home and the Secret', async () => {
    const { resources } = await run({ ...input, running: false });
    expect(one(resources, K.sts).inputs.spec.replicas).toBe(0);
    expect(byType(resources, K.pvc)).toHaveLength(1);
    expect(byType(resources, K.secret)).toHaveLength(1);
  });

  it('gives a computer the same host key on every run and another computer a different one', async () => {
    const first = (await run()).outputs as ComputerProgramOutputs;
    const again = (await run({ ...input, running: false })).outputs as ComputerProgramOutputs;
    const other = (await run({ ...input, computerId: 'cmp_k8stest000000000000002' })).outputs as ComputerProgramOutputs;
    expect(again.ssh.hostKey).toBe(first.ssh.hostKey);
    expect(other.ssh.hostKey).not.toBe(first.ssh.hostKey);
  });

  it('restarts the pod when the authorized key changes, not when only the pause state does', async () => {
    const annotation = async (i: ComputerProgramInput) =>
      one((await run(i)).resources, K.sts).inputs.spec.template.metadata.annotations['agentplane.dev/authorized-key-sha256'];
    const before = await annotation(input);
    expect(await annotation({ ...input, running: false })).toBe(before);
    expect(await annotation({ ...input, authorizedPublicKey: generateKeyPair().publicKey })).not.toBe(before);
  });

  it('requests at least one millicore and one MiB, and the cluster default class when none is set', async () => {
    const defaults = loadConfig({}).kubernetes;
    const { resources } = await run({ ...input, resources: { cpus: 0.001, memoryMiB: 16, diskGiB: 1 } }, defaults);
    const sts = one(resources, K.sts);
    expect(container(sts).resources).toEqual({ requests: { cpu: '1m', memory: '16Mi' }, limits: { cpu: '1m', memory: '16Mi' } });
    expect(container(sts).image).toBe('agentplane-computer:latest');
    expect(sts.inputs.metadata.namespace).toBe('agentplane-computers');
    expect(one(resources, K.pvc).inputs.spec.storageClassName).toBeUndefined();
    expect(sts.inputs.spec.template.spec.runtimeClassName).toBeUndefined();
  });

  it('runs the pod in the sandbox runtime the operator names (gVisor, Kata), its hardening kept', async () => {
    const sandboxed = loadConfig({ AGENTPLANE_K8S_RUNTIME_CLASS: 'gvisor' }).kubernetes;
    const spec = one((await run(input, sandboxed)).resources, K.sts).inputs.spec.template.spec;
    expect(spec.runtimeClassName).toBe('gvisor');
    expect(spec).toMatchObject({ automountServiceAccountToken: false, enableServiceLinks: false, securityContext: { runAsNonRoot: true } });
    expect(() => loadConfig({ AGENTPLANE_K8S_RUNTIME_CLASS: 'gVisor Sandbox' })).toThrow(/AGENTPLANE_K8S_RUNTIME_CLASS/);
  });

  it('takes a key line with a trailing newline as it is, and refuses two keys', async () => {
    const { resources } = await run({ ...input, authorizedPublicKey: `${clientKey.publicKey}\n` });
    expect(secretValue(one(resources, K.secret).inputs.stringData)[IMAGE.authorizedKeysFile]).toBe(`${clientKey.publicKey}\n`);
    const two = `${clientKey.publicKey}\n${generateKeyPair().publicKey}`;
    await expect(kubernetesComputerProgram(settings, hostKeySecret)({ ...input, authorizedPublicKey: two })).rejects.toThrow(
      /authorizedPublicKey: must be one OpenSSH public key line/,
    );
  });

  it('rejects bad input, naming each field, before declaring anything', async () => {
    const bad = {
      ...input,
      computerId: 'CMP-1',
      authorizedPublicKey: clientKey.privateKey,
      resources: { cpus: 0, memoryMiB: 1.5, diskGiB: 0 },
    };
    const { resources, result } = await underMocks({}, [], () => kubernetesComputerProgram(settings, hostKeySecret)(bad).catch((e: unknown) => e));
    const err = (await result) as ComputerInputError;
    expect(err).toBeInstanceOf(ComputerInputError);
    expect(err.problems.map((p) => p.split(':')[0]).sort()).toEqual(
      ['authorizedPublicKey', 'computerId', 'resources.cpus', 'resources.diskGiB', 'resources.memoryMiB'].sort(),
    );
    expect(resources).toHaveLength(0);
  });

  it('rejects a bad setting with its variable name at start-up', () => {
    expect(() => loadConfig({ AGENTPLANE_K8S_CPU_REQUEST_FRACTION: '1.5' })).toThrow(/AGENTPLANE_K8S_CPU_REQUEST_FRACTION: must be at most 1/);
    expect(() => loadConfig({ AGENTPLANE_COMPUTERS_NAMESPACE: 'Team_Computers' })).toThrow(/AGENTPLANE_COMPUTERS_NAMESPACE: must be a DNS label/);
    expect(() => loadConfig({ AGENTPLANE_K8S_STORAGE_CLASS: 'Fast SSD' })).toThrow(/AGENTPLANE_K8S_STORAGE_CLASS/);
    expect(() => loadConfig({ AGENTPLANE_K8S_IMAGE_PULL_POLICY: 'Sometimes' })).toThrow(/AGENTPLANE_K8S_IMAGE_PULL_POLICY/);
  });
});
