import path from 'node:path';
import type { Config } from '../config.ts';
import { createSecretBox, type SecretBox } from '../lib/secret-box.ts';
import { managedProviders } from './providers/index.ts';
import { LOCAL_PROVIDER } from './providers/local/provider.ts';
import { createProviderRegistry, type ProviderRegistry } from './providers/registry.ts';
import { observeStacks } from '../observability/observe.ts';
import { createComputerStacks, type ComputerStacks } from './pulumi/computer-stacks.ts';
import { createProgramEngine, type ProgramEngine } from './programs/index.ts';
import type { PinRepository } from './programs/checkout.ts';
import { createProgramProvider } from './programs/provider.ts';
import { pulumiStateSettings } from './pulumi/state-settings.ts';
import { locatePulumiToolchain } from './pulumi/toolchain.ts';

/** What runs Pulumi for managed computers: the providers' programs, templates' programs and the computers' stacks. */
export interface Provisioner {
  providers: ProviderRegistry;
  stacks: ComputerStacks;
  programs: ProgramEngine;
}

/**
 * The managed providers and the stacks of this deployment, from configuration. Nothing runs
 * until a stack operation does; a missing Pulumi CLI makes the providers unavailable.
 */
export function createProvisioner(
  config: Pick<Config, 'dataDir' | 'pulumiHome' | 'managed' | 'kubernetes' | 'port'> & { relay?: Pick<Config['relay'], 'publicUrl'> },
  secrets: Pick<SecretBox, 'derive'>,
  /** The API's port once this process listens (PORT=0 picks one); a worker alone answers PORT. */
  apiPort: () => number = () => config.port,
  /** How templates' program repositories are reached (egress guard, forge credentials); none: programs cannot be read. */
  pin?: PinRepository,
): Provisioner {
  const toolchain = locatePulumiToolchain({ AGENTPLANE_PULUMI_HOME: config.pulumiHome });
  const state = pulumiStateSettings({
    dataDir: config.dataDir,
    derivePassphrase: () => secrets.derive('pulumi stack passphrase'),
    backendUrl: config.managed.pulumiBackendUrl,
    passphrase: config.managed.pulumiPassphrase,
  });
  const allowed = config.managed.programProviders;
  const stacks = observeStacks(
    createComputerStacks({
      ...state,
      workspacesDir: path.join(config.dataDir, 'pulumi', 'workspaces'),
      toolchain,
      stackKeys: createSecretBox(Buffer.from(secrets.derive('pulumi stack data keys'), 'base64url')),
      // Where dial-in machines reach the API: AGENTPLANE_PUBLIC_URL, else this host's port.
      apiUrl: () => config.relay?.publicUrl ?? `http://127.0.0.1:${apiPort()}`,
    }),
  );
  return {
    providers: createProviderRegistry(
      [
        ...managedProviders(config, toolchain, Buffer.from(secrets.derive('kubernetes computer host keys'), 'base64url'), apiPort),
        createProgramProvider(toolchain, allowed),
      ],
      config.managed.local.enabled ? {} : { [LOCAL_PROVIDER]: 'AGENTPLANE_LOCAL_PROVIDER=false' },
    ),
    stacks,
    programs: createProgramEngine({ dir: path.join(config.dataDir, 'programs'), pin, toolchain, allowedProviders: allowed, stacks }),
  };
}
