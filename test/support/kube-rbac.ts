import { pathToFileURL } from 'node:url';
import k8s from '@pulumi/kubernetes';
import { LocalWorkspace } from '@pulumi/pulumi/automation/index.js';
import { ComputerRbac } from '../../src/deploy/rbac.ts';
import { engineEnv, pulumiCommand } from '../../src/provisioning/pulumi/engine-env.ts';
import type { PulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import type { KubeCluster } from './kube-cluster.ts';

/**
 * What the deploy program makes for the control plane before it can create computers: its
 * namespace, the computers' namespace, its ServiceAccount `agentplane` and the Role granted in the
 * computers' namespace, applied by the deploy program's own ComputerRbac component as the cluster
 * admin (a stack in `workDir`). Returns a kubeconfig with the ServiceAccount's token, so whatever
 * uses it can do exactly what the Role allows.
 */
export async function grantControlPlane(
  cluster: KubeCluster,
  toolchain: PulumiToolchain,
  o: { namespace: string; computersNamespace: string; workDir: string },
): Promise<string> {
  const stack = await LocalWorkspace.createOrSelectStack(
    {
      projectName: 'agentplane-rbac',
      stackName: o.namespace,
      program: async () => {
        const provider = new k8s.Provider('admin', { kubeconfig: cluster.kubeconfig });
        const labels = { 'app.kubernetes.io/name': 'agentplane' };
        const ns = new k8s.core.v1.Namespace('control-plane', { metadata: { name: o.namespace, labels } }, { provider });
        const computers = new k8s.core.v1.Namespace('computers', { metadata: { name: o.computersNamespace, labels } }, { provider });
        new ComputerRbac('rbac', { namespace: ns.metadata.name, computersNamespace: computers.metadata.name, labels }, { providers: [provider] });
      },
    },
    {
      workDir: o.workDir,
      pulumiCommand: await pulumiCommand(toolchain),
      envVars: engineEnv({ backendUrl: pathToFileURL(o.workDir).href, passphrase: 'rbac', toolchain }),
    },
  );
  await stack.up();
  return cluster.writeKubeconfig(`${o.namespace}-sa`, await cluster.serviceAccountToken(o.namespace, 'agentplane'));
}
