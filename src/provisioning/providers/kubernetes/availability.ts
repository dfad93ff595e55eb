import { access } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { PulumiToolchain } from '../../pulumi/toolchain.ts';

/** Where Kubernetes mounts a pod's service-account token: present when the control plane runs in a cluster. */
const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

const require = createRequire(import.meta.url);

/** The plugin the program needs, at the version of the @pulumi/kubernetes dependency, under a PULUMI_HOME. */
export function kubernetesPluginPath(pulumiHome: string): string {
  const version = (require('@pulumi/kubernetes/package.json') as { version: string }).version;
  return path.join(pulumiHome, 'plugins', `resource-kubernetes-v${version}`, 'pulumi-resource-kubernetes');
}

/**
 * What is missing before the provider can run (empty when nothing is): a cluster to talk to —
 * a kubeconfig named by KUBECONFIG or the in-cluster service account — and the toolchain's
 * Pulumi CLI with the kubernetes plugin. A `~/.kube/config` alone does not count: a developer's
 * personal cluster should not silently become where computers are created.
 */
export async function missingPrerequisites(
  toolchain: PulumiToolchain,
  env: NodeJS.ProcessEnv = process.env,
  inClusterToken: string = IN_CLUSTER_TOKEN,
): Promise<string[]> {
  const missing: string[] = [];
  const kubeconfigs = (env.KUBECONFIG ?? '').split(path.delimiter).filter(Boolean);
  if (kubeconfigs.length > 0) {
    const found = await Promise.all(kubeconfigs.map(exists));
    if (!found.some(Boolean)) missing.push(`no file named by KUBECONFIG exists (${env.KUBECONFIG})`);
  } else if (!env.KUBERNETES_SERVICE_HOST || !(await exists(inClusterToken))) {
    missing.push('no cluster: set KUBECONFIG, or run the control plane in a pod with a service account');
  }
  if (!(await exists(toolchain.pulumiBin))) missing.push(`the Pulumi CLI is not at ${toolchain.pulumiBin} (bash scripts/pulumi-toolchain.sh)`);
  const plugin = kubernetesPluginPath(toolchain.pulumiHome);
  if (!(await exists(plugin))) missing.push(`the kubernetes plugin is not at ${plugin} (bash scripts/pulumi-toolchain.sh)`);
  return missing;
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}
