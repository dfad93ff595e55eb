import path from 'node:path';
import type { Config } from '../../config.ts';
import type { PulumiToolchain } from '../pulumi/toolchain.ts';
import { createLocalProvider } from './local/provider.ts';
import type { ManagedProvider } from './types.ts';

/** Every managed provider this deployment is configured with; each says itself whether it is usable here. */
export function managedProviders(config: Pick<Config, 'dataDir' | 'managed'>, toolchain: PulumiToolchain): ManagedProvider[] {
  const providers: ManagedProvider[] = [];
  if (config.managed.local.enabled) {
    providers.push(createLocalProvider({ root: path.join(config.dataDir, 'computers'), subnet: config.managed.local.subnet, toolchain }));
  }
  return providers;
}
