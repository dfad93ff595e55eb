import type { Computer } from '../../../generated/prisma/client.ts';
import type { ProviderRegistry } from '../../../provisioning/providers/registry.ts';
import type { ComputerProgramInput, ComputerResources, ManagedProvider } from '../../../provisioning/providers/types.ts';

/** The provider program's input for a stored computer; `running` defaults to its power state. */
export function programInput(computer: Computer, running = computer.powerState !== 'paused'): ComputerProgramInput {
  if (!computer.sshPublicKey || !computer.resources) throw new Error(`computer ${computer.id} is not a managed computer`);
  return {
    computerId: computer.id,
    name: computer.name,
    organizationId: computer.organizationId,
    authorizedPublicKey: computer.sshPublicKey,
    resources: computer.resources as unknown as ComputerResources,
    running,
  };
}

/** The provider that runs a stored computer's stack; throws when this control plane lacks it. */
export function providerOf(providers: ProviderRegistry, computer: Computer): ManagedProvider {
  const provider = providers.get(computer.providerType);
  if (!provider) throw new Error(`provider ${computer.providerType} is not configured on this control plane`);
  return provider;
}
