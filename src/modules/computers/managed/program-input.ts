import type { Computer } from '../../../generated/prisma/client.ts';
import type { ComputerProgramInput, ComputerResources } from '../../../provisioning/providers/types.ts';

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
