import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createKubernetesProvider, kubernetesPluginPath, missingPrerequisites } from '../../src/provisioning/providers/kubernetes/index.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'k8s-availability-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function touch(file: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, '');
  return file;
}

// A toolchain cache laid out as scripts/pulumi-toolchain.sh leaves it (the CLI and the kubernetes plugin).
const pulumiCache = path.join(dir, 'pulumi');
const toolchain = locatePulumiToolchain({ AGENTPLANE_PULUMI_HOME: pulumiCache });
touch(toolchain.pulumiBin);
touch(kubernetesPluginPath(toolchain.pulumiHome));
const kubeconfig = touch(path.join(dir, 'kubeconfig'));
const token = touch(path.join(dir, 'serviceaccount', 'token'));
const base = { AGENTPLANE_PULUMI_HOME: pulumiCache };

const provider = (env: NodeJS.ProcessEnv, inClusterToken = path.join(dir, 'no-token')) =>
  createKubernetesProvider({
    settings: loadConfig({}).kubernetes,
    hostKeySecret: Buffer.alloc(32),
    toolchain: locatePulumiToolchain(env),
    env,
    inClusterToken,
  });

describe('kubernetes provider availability', () => {
  it('is available with a kubeconfig named by KUBECONFIG and the CLI and plugin installed', async () => {
    const p = provider({ ...base, KUBECONFIG: kubeconfig });
    expect(p.name).toBe('kubernetes');
    expect(await p.missingPrerequisites()).toEqual([]);
    expect(await provider({ ...base, KUBECONFIG: [path.join(dir, 'gone'), kubeconfig].join(path.delimiter) }).missingPrerequisites()).toEqual([]);
  });

  it('is available inside a cluster: service host set and the service-account token mounted', async () => {
    expect(await provider({ ...base, KUBERNETES_SERVICE_HOST: '10.0.0.1' }, token).missingPrerequisites()).toEqual([]);
    expect((await provider({ ...base, KUBERNETES_SERVICE_HOST: '10.0.0.1' }).missingPrerequisites()).length).toBeGreaterThan(0);
  });

  it('is unavailable without a cluster, saying so', async () => {
    expect((await provider(base).missingPrerequisites()).length).toBeGreaterThan(0);
    expect(await missingPrerequisites(toolchain, base, path.join(dir, 'no-token'))).toEqual([
      'no cluster: set KUBECONFIG, or run the control plane in a pod with a service account',
    ]);
    expect(await missingPrerequisites(toolchain, { ...base, KUBECONFIG: path.join(dir, 'gone') })).toEqual([
      `no file named by KUBECONFIG exists (${path.join(dir, 'gone')})`,
    ]);
  });

  it('is unavailable without the Pulumi CLI or the kubernetes plugin, naming where they belong', async () => {
    const empty = { AGENTPLANE_PULUMI_HOME: path.join(dir, 'empty'), KUBECONFIG: kubeconfig };
    const missing = await missingPrerequisites(locatePulumiToolchain(empty), empty);
    expect(missing).toHaveLength(2);
    expect(missing[0]).toContain(locatePulumiToolchain(empty).pulumiBin);
    expect(missing[1]).toContain(kubernetesPluginPath(locatePulumiToolchain(empty).pulumiHome));
    expect((await provider(empty).missingPrerequisites()).length).toBeGreaterThan(0);
  });
});
