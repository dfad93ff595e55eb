import type { ProviderRegistry } from '../../provisioning/providers/registry.ts';

export function createComputersService(deps: { providers: ProviderRegistry }) {
  return {
    /** Managed providers whose prerequisites are present on this deployment right now. */
    listAvailableProviders: () => deps.providers.available(),
  };
}
export type ComputersService = ReturnType<typeof createComputersService>;
