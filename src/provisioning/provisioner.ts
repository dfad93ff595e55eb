import path from 'node:path';
import type { Config } from '../config.ts';
import { createSecretBox, type SecretBox } from '../lib/secret-box.ts';
import { managedProviders } from './providers/index.ts';
import { LOCAL_PROVIDER } from './providers/local/provider.ts';
import { createProviderRegistry, type ProviderRegistry } from './providers/registry.ts';
import { observeStacks } from '../observability/observe.ts';
import { createComputerStacks, type ComputerStacks } from './pulumi/computer-stacks.ts';
import { pulumiStateSettings } from './pulumi/state-settings.ts';
import { locatePulumiToolchain } from './pulumi/toolchain.ts';

/** What runs Pulumi for managed computers: the providers' programs and the computers' stacks. */
export interface Provisioner {
  providers: ProviderRegistry;
  stacks: ComputerStacks;
}

/**
 * The managed providers and the stacks of this deployment, from configuration. Nothing runs
 * until a stack operation does; a missing Pulumi CLI makes the providers unavailable.
 */
export function createProvisioner(
  config: Pick<Config, 'dataDir' | 'pulumiHome' | 'managed' | 'kubernetes' | 'port'>,
  secrets: Pick<SecretBox, 'derive'>,
  /** The API's port once this process listens (PORT=0 picks one); a worker alone answers PORT. */
  apiPort: () => number = () => config.port,
): Provisioner {
  const toolchain = locatePulumiToolchain({ AGENTPLANE_PULUMI_HOME: config.pulumiHome });
  const state = pulumiStateSettings({
    dataDir: config.dataDir,
    derivePassphrase: () => secrets.derive('pulumi stack passphrase'),
    backendUrl: config.managed.pulumiBackendUrl,
    passphrase: config.managed.pulumiPassphrase,
  });
  return {
    providers: createProviderRegistry(
      managedProviders(config, toolchain, Buffer.from(secrets.derive('kubernetes computer host keys'), 'base64url'), apiPort),
      config.managed.local.enabled ? {} : { [LOCAL_PROVIDER]: 'AGENTPLANE_LOCAL_PROVIDER=false' },
    ),
    stacks: observeStacks(
      createComputerStacks({
        ...state,
        workspacesDir: path.join(config.dataDir, 'pulumi', 'workspaces'),
        toolchain,
        stackKeys: createSecretBox(Buffer.from(secrets.derive('pulumi stack data keys'), 'base64url')),
      }),
    ),
  };
}
