import type { Config } from '../../config.ts';
import type { ManagedProvider } from './types.ts';

/** Every managed provider this build knows; each says itself whether it is usable here. */
export function managedProviders(_config: Config): ManagedProvider[] {
  return [];
}
