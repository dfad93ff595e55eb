import type { Computer } from '../../../generated/prisma/client.ts';
import type { StackConfig } from '../../../provisioning/pulumi/computer-stacks.ts';
import type { StackProgram } from '../../../provisioning/programs/index.ts';
import type { ComputerResources } from '../../../provisioning/providers/types.ts';
import type { ComputerJobDeps } from '../job-deps.ts';

/**
 * The stack configuration of a stored computer (`agentplane:*`); `running` defaults to its power
 * state. `apiUrl` defaults to the control plane's own; `registrationToken` is given to a dial-in
 * computer's provisioning only.
 */
export function programConfig(
  computer: Computer,
  running = computer.powerState !== 'paused',
  extra: Pick<StackConfig, 'apiUrl' | 'registrationToken'> = {},
): StackConfig {
  if (!computer.sshPublicKey || !computer.resources) throw new Error(`computer ${computer.id} is not a managed computer`);
  const r = computer.resources as unknown as ComputerResources;
  return {
    computerId: computer.id,
    name: computer.name,
    organizationId: computer.organizationId,
    authorizedKey: computer.sshPublicKey,
    cpu: r.cpus,
    memoryMb: r.memoryMiB,
    diskGb: r.diskGiB,
    running,
    ...extra,
  };
}

/**
 * What a stored computer's stack runs: its template version's program when it has one (checked
 * out at that version's commit), else the built-in program of its provider. Throws when this
 * control plane lacks the provider, or the version or its template is gone.
 */
export async function stackProgramOf(
  deps: Pick<ComputerJobDeps, 'db' | 'provisioner'>,
  computer: Computer,
  signal: AbortSignal = new AbortController().signal,
  /** `inspect: false` for a teardown: what the program made is destroyed even if its providers are no longer allowed. */
  opts: { inspect?: boolean } = {},
): Promise<StackProgram> {
  if (computer.templateVersionId) {
    const version = await deps.db.computerTemplateVersion.findFirst({ where: { id: computer.templateVersionId }, include: { template: true } });
    const t = version?.template;
    if (!version || !t?.programRepository)
      throw new Error(`computer ${computer.id}: its template version ${computer.templateVersionId} or its program is gone`);
    const source = { repository: t.programRepository, path: t.programPath ?? '', ref: t.programRef ?? version.commit };
    return deps.provisioner.programs.stackProgram(computer.organizationId, source, version.commit, signal, opts);
  }
  const provider = deps.provisioner.providers.get(computer.providerType);
  if (!provider) throw new Error(`provider ${computer.providerType} is not configured on this control plane`);
  return { kind: 'builtin', name: provider.name, program: provider.program };
}
