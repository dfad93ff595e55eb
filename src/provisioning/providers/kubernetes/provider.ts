import type { PulumiToolchain } from '../../pulumi/toolchain.ts';
import type { ManagedProvider } from '../types.ts';
import { missingPrerequisites } from './availability.ts';
import type { KubernetesSettings } from './settings.ts';

export interface KubernetesProviderOptions {
  /** `config.kubernetes`. */
  settings: KubernetesSettings;
  /** The control plane's encryption key (loadEncryptionKey): the root every computer's host key is derived from. */
  hostKeySecret: Buffer;
  /** The Pulumi CLI and plugins the provisioner runs stacks with. */
  toolchain: PulumiToolchain;
  /** Where KUBECONFIG and KUBERNETES_SERVICE_HOST are read; this process's by default. */
  env?: NodeJS.ProcessEnv;
  /** The in-cluster service-account token's path; tests point it elsewhere. */
  inClusterToken?: string;
}

/** The `kubernetes` managed provider: computers as StatefulSets in one namespace of a cluster. */
export function createKubernetesProvider(o: KubernetesProviderOptions): ManagedProvider {
  return {
    name: 'kubernetes',
    missingPrerequisites: () => missingPrerequisites(o.toolchain, o.env, o.inClusterToken),
    // Loaded when a stack runs: @pulumi/kubernetes and @pulumi/pulumi cost a second at every start.
    program: async (input) => (await import('./program.ts')).kubernetesComputerProgram(o.settings, o.hostKeySecret)(input),
  };
}
