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
  config: Pick<Config, 'dataDir' | 'managed' | 'kubernetes'>,
  toolchain: PulumiToolchain,
  hostKeySecret: Buffer,
): ManagedProvider[] {
  const providers: ManagedProvider[] = [createKubernetesProvider({ settings: config.kubernetes, hostKeySecret, toolchain })];
  if (config.managed.local.enabled) {
    providers.push(createLocalProvider({ root: path.join(config.dataDir, 'computers'), subnet: config.managed.local.subnet, toolchain }));
  }
  return providers;
}
