import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalWorkspace, type Stack } from '@pulumi/pulumi/automation/index.js';
import { kubernetesPluginPath } from '../../src/provisioning/providers/kubernetes/availability.ts';
import { engineEnv, pulumiCommand } from '../../src/provisioning/pulumi/engine-env.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { kubeBinDir, sharedKubeCluster, type KubeCluster } from '../support/kube-cluster.ts';
import { skipWithout } from '../support/parts.ts';
import { sshdMissing, startSshd, type TestSshd } from '../support/sshd.ts';

/**
 * Pulumi YAML programs (runtime: yaml) run through the Automation API with the toolchain's own
 * language host (pulumi-language-yaml) and plugins: agentplane's command plugin (its schema is what
 * lets YAML declare command:local:Command and command:remote:Command) and upstream's Kubernetes
 * provider against the test cluster. The path environment programs (#29) build on.
 */
const toolchain = locatePulumiToolchain();
const yamlHost = path.join(toolchain.binDir, 'pulumi-language-yaml');
const toolchainMissing = !toolchain.available
  ? `the Pulumi CLI or pulumi-resource-command is missing under ${path.dirname(toolchain.binDir)} (bash scripts/pulumi-toolchain.sh)`
  : existsSync(yamlHost)
    ? undefined
    : `pulumi-language-yaml is not in ${toolchain.binDir} (bash scripts/pulumi-toolchain.sh)`;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'agentplane-pulumi-yaml-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A stack of the YAML program `program` (the body of Pulumi.yaml after name and runtime) in its own directory. */
async function yamlStack(name: string, program: string, env: Record<string, string> = {}): Promise<Stack> {
  const workDir = path.join(dir, name);
  await mkdir(workDir, { recursive: true });
  await writeFile(path.join(workDir, 'Pulumi.yaml'), `name: ${name}\nruntime: yaml\n${program}`);
  return LocalWorkspace.createOrSelectStack(
    { stackName: 'test', workDir },
    {
      pulumiCommand: await pulumiCommand(toolchain),
      envVars: { ...engineEnv({ backendUrl: pathToFileURL(dir).href, passphrase: 'yaml-test', toolchain }), ...env },
    },
  );
}

describe.skipIf(skipWithout('Pulumi YAML programs', toolchainMissing))('Pulumi YAML programs with the command plugin', () => {
  let sshd: TestSshd;
  beforeAll(async () => {
    sshd = await startSshd();
  });
  afterAll(async () => {
    await sshd?.stop();
  });

  it('reads agentplane:* config it does not declare and runs command:local:Command through create, update and delete', { timeout: 120_000 }, async () => {
    const marker = path.join(dir, 'local-marker');
    const stack = await yamlStack(
      'local-command',
      [
        'config:',
        '  label:',
        '    type: string',
        'resources:',
        '  hello:',
        '    type: command:local:Command',
        '    properties:',
        `      create: echo "made $COMPUTER" > ${marker}-$COMPUTER; echo created $COMPUTER`,
        `      delete: rm ${marker}-$COMPUTER`,
        '      environment:',
        '        COMPUTER: ${agentplane:computerId}',
        '      triggers:',
        '        - ${label}',
        'outputs:',
        '  said: ${hello.stdout}',
      ].join('\n'),
    );
    await stack.setAllConfig({ 'agentplane:computerId': { value: 'cmp_1' }, 'local-command:label': { value: 'one' } });
    const up = await stack.up();
    expect(up.summary.result).toBe('succeeded');
    expect(up.outputs.said?.value).toBe('created cmp_1');
    expect(await readFile(`${marker}-cmp_1`, 'utf8')).toBe('made cmp_1\n');

    // A new trigger replaces the command: the new one is created, then the old one deleted (its own environment).
    await stack.setConfig('agentplane:computerId', { value: 'cmp_2' });
    await stack.setConfig('local-command:label', { value: 'two' });
    const again = await stack.up();
    expect(again.summary.resourceChanges).toMatchObject({ replace: 1 });
    expect(again.outputs.said?.value).toBe('created cmp_2');
    expect(existsSync(`${marker}-cmp_1`)).toBe(false);
    expect(await readFile(`${marker}-cmp_2`, 'utf8')).toBe('made cmp_2\n');

    const down = await stack.destroy();
    expect(down.summary.result).toBe('succeeded');
    expect(existsSync(`${marker}-cmp_2`)).toBe(false);
  });

  it.skipIf(sshdMissing())('runs command:remote:Command over SSH, with the connection kept secret and a host key checked', { timeout: 120_000 }, async () => {
    const hostKey = execFileSync('ssh-keyscan', ['-p', String(sshd.port), '-t', 'ed25519', sshd.host], { encoding: 'utf8' })
      .split('\n')
      .find((l) => l.includes('ssh-ed25519'))!
      .split(' ')
      .slice(1)
      .join(' ');
    const program = (key: string) =>
      [
        'config:',
        '  privateKey:',
        '    type: string',
        'resources:',
        '  remote:',
        '    type: command:remote:Command',
        '    properties:',
        '      connection:',
        `        host: ${sshd.host}`,
        `        port: ${sshd.port}`,
        `        user: ${sshd.username}`,
        '        privateKey: ${privateKey}',
        `        hostKey: ${key}`,
        '        dialErrorLimit: 1',
        `      create: echo "$GREETING from $(whoami)"; printf 'it\\x27s' > remote-marker`,
        '      delete: rm remote-marker',
        '      environment:',
        '        GREETING: "it\'s me"',
        'outputs:',
        '  said: ${remote.stdout}',
      ].join('\n');
    const stack = await yamlStack('remote-command', program(hostKey));
    await stack.setConfig('remote-command:privateKey', { value: sshd.privateKey, secret: true });
    const up = await stack.up();
    expect(up.outputs.said?.value).toBe(`it's me from ${sshd.username}`);
    // The connection (its key) is a secret in the state as stored, by the schema's word.
    const state = await readFile(path.join(dir, '.pulumi', 'stacks', 'remote-command', 'test.json'), 'utf8');
    expect(state).toContain('remote-command');
    expect(state).not.toContain('PRIVATE KEY');
    expect(await stack.destroy()).toMatchObject({ summary: { result: 'succeeded' } });

    // Another host key: the handshake is refused and nothing is created.
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(dir, 'other')]);
    const wrongKey = (await readFile(path.join(dir, 'other.pub'), 'utf8')).split(' ').slice(0, 2).join(' ');
    const refused = await yamlStack('remote-command-wrong', program(wrongKey));
    await refused.setConfig('remote-command-wrong:privateKey', { value: sshd.privateKey, secret: true });
    await expect(refused.up()).rejects.toThrow(/host key/);
    expect((await refused.exportStack()).deployment.resources ?? []).not.toContainEqual(expect.objectContaining({ type: 'command:remote:Command' }));
  });
});

const kube = kubeBinDir();
const kubeMissing =
  toolchainMissing ??
  kube.missing ??
  (existsSync(kubernetesPluginPath(toolchain.pulumiHome)) ? undefined : 'pulumi-resource-kubernetes is missing (bash scripts/pulumi-toolchain.sh)');

describe.skipIf(skipWithout('a Pulumi YAML program on the test cluster', kubeMissing))('a Pulumi YAML program with upstream pulumi-kubernetes', () => {
  let cluster: KubeCluster;
  beforeAll(async () => {
    cluster = await sharedKubeCluster(kube.bin!);
  });

  it('creates a Secret, a Service and a one-pod StatefulSet, waits for them, and destroys them', { timeout: 240_000 }, async () => {
    const ns = `ap-yaml-${Date.now().toString(36)}`;
    const stack = await yamlStack(
      'kube-program',
      [
        'resources:',
        '  ns:',
        '    type: kubernetes:core/v1:Namespace',
        '    properties:',
        `      metadata: { name: ${ns} }`,
        '  key:',
        '    type: kubernetes:core/v1:Secret',
        '    properties:',
        '      metadata:',
        '        name: machine-key',
        '        namespace: ${ns.metadata.name}',
        '      stringData: { authorized_keys: "ssh-ed25519 AAAA test" }',
        '  svc:',
        '    type: kubernetes:core/v1:Service',
        '    properties:',
        '      metadata:',
        '        name: machine',
        '        namespace: ${ns.metadata.name}',
        '      spec:',
        '        selector: { app: machine }',
        '        ports: [{ port: 22, targetPort: 22 }]',
        '  machine:',
        '    type: kubernetes:apps/v1:StatefulSet',
        '    properties:',
        '      metadata:',
        '        name: machine',
        '        namespace: ${ns.metadata.name}',
        '      spec:',
        '        serviceName: machine',
        '        replicas: 1',
        '        selector: { matchLabels: { app: machine } }',
        '        template:',
        '          metadata: { labels: { app: machine } }',
        '          spec:',
        '            containers:',
        '              - name: sshd',
        '                image: agentplane-computer:test',
        '                ports: [{ containerPort: 22 }]',
        '                volumeMounts: [{ name: key, mountPath: /keys }]',
        '            volumes:',
        '              - name: key',
        '                secret:',
        '                  secretName: ${key.metadata.name}',
        'outputs:',
        '  ready: ${machine.status.readyReplicas}',
        '  clusterIp: ${svc.spec.clusterIP}',
      ].join('\n'),
      { KUBECONFIG: cluster.kubeconfig },
    );
    const up = await stack.up();
    expect(up.summary.result).toBe('succeeded');
    expect(up.summary.resourceChanges).toMatchObject({ create: 5 });
    expect(up.outputs.ready?.value).toBe(1);
    expect(up.outputs.clusterIp?.value).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const secret = await cluster.get(`/api/v1/namespaces/${ns}/secrets/machine-key`);
    expect(Buffer.from(secret.data.authorized_keys, 'base64').toString()).toBe('ssh-ed25519 AAAA test');
    expect((await cluster.get(`/apis/apps/v1/namespaces/${ns}/statefulsets/machine`)).status.readyReplicas).toBe(1);

    const down = await stack.destroy();
    expect(down.summary.result).toBe('succeeded');
    expect((await cluster.api('GET', `/api/v1/namespaces/${ns}`)).status).toBe(404);
  });
});
