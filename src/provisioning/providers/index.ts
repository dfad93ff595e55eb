import path from 'node:path';
import type { Config } from '../../config.ts';
import type { PulumiToolchain } from '../pulumi/toolchain.ts';
import { createKubernetesProvider } from './kubernetes/index.ts';
import { createLocalProvider } from './local/provider.ts';
import type { ManagedProvider } from './types.ts';

/**
 * Every managed provider this deployment is configured with; each says itself whether it is
 * usable here. `hostKeySecret` is the root the kubernetes computers' host keys are derived from.
 */
export function managedProviders(
  config: Pick<Config, 'dataDir' | 'managed' | 'kubernetes' | 'port'>,
  toolchain: PulumiToolchain,
  hostKeySecret: Buffer,
  apiPort: () => number = () => config.port,
): ManagedProvider[] {
  const providers: ManagedProvider[] = [createKubernetesProvider({ settings: config.kubernetes, hostKeySecret, toolchain })];
  if (config.managed.local.enabled) {
    const { root, subnet, allow, pidsMax } = config.managed.local;
    providers.push(createLocalProvider({ root, legacyRoot: path.join(config.dataDir, 'computers'), subnet, allow, pidsMax, apiPort, toolchain }));
  }
  return providers;
}
