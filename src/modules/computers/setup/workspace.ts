import type { SshTarget } from '../../../ssh/index.ts';
import type { ComputerJobDeps } from '../job-deps.ts';

/** Where set-up clones repositories, under the remote user's home. */
export const WORKSPACE_DIR = 'workspace';

/** Creates the workspace directory in the remote user's home; answers the home. */
export async function prepareWorkspace(deps: Pick<ComputerJobDeps, 'ssh'>, target: SshTarget, signal: AbortSignal): Promise<string> {
  const result = await deps.ssh.exec(target, `mkdir -p "$HOME/${WORKSPACE_DIR}" && printf %s "$HOME"`, { signal, timeoutMs: 30_000 });
  if (result.exitCode !== 0) throw new Error(`creating ~/${WORKSPACE_DIR} failed: ${result.stderr.trim() || `exit ${result.exitCode}`}`);
  return result.stdout.trim();
}

export const SETUP_SCRIPT_TIMEOUT_MS = 30 * 60_000;

/** A template's setup script, run by bash from the user's home; a non-zero exit fails with the output's end. */
export async function runSetupScript(deps: Pick<ComputerJobDeps, 'ssh'>, target: SshTarget, script: string, signal: AbortSignal): Promise<void> {
  // A script cut off from the control plane is run again by the step's retry: never two at once.
  const result = await deps.ssh.exec(target, 'cd "$HOME" && bash -se', { stdin: script, signal, timeoutMs: SETUP_SCRIPT_TIMEOUT_MS, endWithConnection: true });
  if (result.exitCode === 0) return;
  const tail = `${result.stdout}\n${result.stderr}`.trim().split('\n').slice(-10).join('\n');
  throw new Error(`the setup script ${result.exitCode === null ? 'was killed' : `exited with ${result.exitCode}`}: ${tail}`);
}

/** An agent machine reports its id only when it connects; a clash with a live sibling is left unset. */
export async function adoptHostId(
  deps: Pick<ComputerJobDeps, 'db'>,
  computer: { id: string; organizationId: string; ownerId: string },
  hostId: string,
): Promise<void> {
  const clash = await deps.db.computer.findFirst({
    where: { organizationId: computer.organizationId, ownerId: computer.ownerId, liveHostId: hostId },
    select: { id: true },
  });
  if (!clash) await deps.db.computer.update({ where: { id: computer.id }, data: { hostId, liveHostId: hostId } });
}
