import type { JobContext } from '../../jobs/job.ts';
import { SshError, type SshTarget } from '../../provisioning/ssh/index.ts';
import { cloneRepo } from '../../provisioning/machine/index.ts';
import { startInstallSession } from './install.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { BYOM, targetFor } from './machines.ts';
import { deadline, INSTALL_DEADLINE_MS, SSH_WAIT_MS } from './managed/settings.ts';
import { settleProvisioning } from './managed/settle.ts';
import { copyWorkspace } from './managed/copy-workspace.ts';
import { setupScriptOf, sourceComputerOf } from './managed/source.ts';
import { waitForSsh } from './managed/wait-for-ssh.ts';
import { skipPendingSteps, STEP, updateStep } from './steps.ts';

/** Where byom set-up clones repositories, under the remote user's home. */
export const WORKSPACE_DIR = 'workspace';

/**
 * The set-up of a computer once it is reachable, step by step: connect, prepare the user's
 * workspace, clone, install. Idempotent: a retried run skips finished steps, and cloning into an
 * existing clone fetches instead. While an agent machine has not dialled in yet, the run fails
 * and is retried; the last attempt records why on the step. A managed computer's fresh sshd is
 * waited for instead, and provisioning ends (`active` or `error`) once every step has finished.
 */
export async function runComputerSetup(deps: ComputerJobDeps, computerId: string, ctx: JobContext, retryLimit: number): Promise<void> {
  const computer = await deps.db.computer.findFirst({ where: { id: computerId, deletedAt: null } });
  if (!computer) return;
  const steps = await deps.db.provisioningStep.findMany({ where: { computerId }, orderBy: { position: 'asc' } });
  const pending = (id: string) => steps.find((s) => s.id === id && s.status !== 'completed');
  const now = () => deps.clock.now();
  const target = await targetFor(deps, computer);
  const managed = computer.providerType !== BYOM;

  const connect = pending(STEP.connect);
  if (connect) {
    await updateStep(deps.db, computerId, STEP.connect, { status: 'running', startedAt: connect.startedAt ?? now() });
    try {
      if (managed) {
        // A managed computer's id is its own (its hostId is whatever the caller gave), and its
        // sshd has only just started: wait for it to answer with the pinned host key.
        await waitForSsh(deps.ssh, target, { signal: ctx.signal, timeoutMs: SSH_WAIT_MS });
      } else {
        const machineHostId = await deps.ssh.machineId(target, { signal: ctx.signal });
        if (!computer.hostId) await adoptHostId(deps, computer.id, computer.organizationId, computer.ownerId, machineHostId);
      }
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      const last = ctx.attempt > retryLimit;
      if (err instanceof SshError && !last && !managed) {
        await updateStep(deps.db, computerId, STEP.connect, { status: 'running', error: `waiting for the machine: ${err.message}` });
        throw err;
      }
      await failProvisioning(deps, computerId, { step: STEP.connect, err }, 'the machine could not be reached');
      return;
    }
    await updateStep(deps.db, computerId, STEP.connect, { status: 'completed', error: null, completedAt: now() });
  }

  const verify = pending(STEP.verify);
  let home: string;
  try {
    home = await prepareWorkspace(deps, target, ctx.signal);
  } catch (err) {
    if (ctx.signal.aborted || (err instanceof SshError && ctx.attempt <= retryLimit)) throw err;
    await failProvisioning(deps, computerId, { step: STEP.verify, err, startedAt: verify?.startedAt ?? now() }, 'the workspace could not be prepared');
    return;
  }
  if (verify) {
    await updateStep(deps.db, computerId, STEP.verify, { status: 'completed', error: null, startedAt: verify.startedAt ?? now(), completedAt: now() });
  }

  const directories = new Set(computer.clonedRepoDirectories);
  const sourceComputerId = sourceComputerOf(computer.source);
  if (pending(STEP.copyWorkspace) && sourceComputerId) {
    await updateStep(deps.db, computerId, STEP.copyWorkspace, { status: 'running', error: null, startedAt: now() });
    try {
      const from = await deps.db.computer.findFirst({ where: { id: sourceComputerId, deletedAt: null } });
      if (!from) throw new Error(`the source computer ${sourceComputerId} was deleted`);
      for (const d of await copyWorkspace(deps, from, { target, home }, ctx.signal)) directories.add(d);
      await deps.db.computer.update({ where: { id: computerId }, data: { clonedRepoDirectories: [...directories] } });
      await updateStep(deps.db, computerId, STEP.copyWorkspace, { status: 'completed', completedAt: now() });
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      await updateStep(deps.db, computerId, STEP.copyWorkspace, { status: 'failed', error: messageOf(err), completedAt: now() });
    }
  }

  for (const [i, url] of computer.repos.entries()) {
    const step = pending(STEP.clone(i + 1));
    if (!step) continue;
    await updateStep(deps.db, computerId, step.id, { status: 'running', error: null, startedAt: now() });
    try {
      const { directory } = await cloneRepo(deps.ssh, target, { url, workspaceDir: `${home}/${WORKSPACE_DIR}`, signal: ctx.signal });
      directories.add(directory);
      await deps.db.computer.update({ where: { id: computerId }, data: { clonedRepoDirectories: [...directories] } });
      await updateStep(deps.db, computerId, step.id, { status: 'completed', completedAt: now() });
    } catch (err) {
      if (err instanceof SshError && err.kind !== 'host_key_mismatch' && ctx.attempt <= retryLimit) throw err;
      await updateStep(deps.db, computerId, step.id, { status: 'failed', error: messageOf(err), completedAt: now() });
    }
  }

  const setupScript = setupScriptOf(computer.source);
  const scripted = pending(STEP.setupScript);
  if (scripted && setupScript) {
    await updateStep(deps.db, computerId, STEP.setupScript, { status: 'running', error: null, startedAt: now() });
    try {
      await runSetupScript(deps, target, setupScript, ctx.signal);
      await updateStep(deps.db, computerId, STEP.setupScript, { status: 'completed', completedAt: now() });
    } catch (err) {
      if (ctx.signal.aborted || (err instanceof SshError && ctx.attempt <= retryLimit)) throw err;
      await updateStep(deps.db, computerId, STEP.setupScript, { status: 'failed', error: messageOf(err), completedAt: now() });
    }
  }

  if (pending(STEP.installDeps)?.status === 'pending') {
    await deps.db.$transaction(async (tx) => {
      const fresh = await tx.computer.findUniqueOrThrow({ where: { id: computerId } });
      if (fresh.clonedRepoDirectories.length === 0) {
        await updateStep(tx, computerId, STEP.installDeps, { status: 'skipped', error: 'no repository was cloned', completedAt: now() });
        return;
      }
      await startInstallSession(tx, ctx, fresh, now());
      // Provisioning now ends when the install does (finishInstallRun), so its deadline moves.
      if (managed) {
        await tx.computer.updateMany({
          where: { id: computerId, operation: 'provision' },
          data: { operationDeadline: deadline(now(), INSTALL_DEADLINE_MS) },
        });
      }
    });
  }
  await settleProvisioning(deps.db, computerId, now());
}

/** Creates the workspace directory in the remote user's home; answers the home. */
async function prepareWorkspace(deps: ComputerJobDeps, target: SshTarget, signal: AbortSignal): Promise<string> {
  const result = await deps.ssh.exec(target, `mkdir -p "$HOME/${WORKSPACE_DIR}" && printf %s "$HOME"`, { signal, timeoutMs: 30_000 });
  if (result.exitCode !== 0) throw new Error(`creating ~/${WORKSPACE_DIR} failed: ${result.stderr.trim() || `exit ${result.exitCode}`}`);
  return result.stdout.trim();
}

const SETUP_SCRIPT_TIMEOUT_MS = 30 * 60_000;

/** A template's setup script, run by bash from the user's home; a non-zero exit fails with the output's end. */
async function runSetupScript(deps: ComputerJobDeps, target: SshTarget, script: string, signal: AbortSignal): Promise<void> {
  const result = await deps.ssh.exec(target, 'cd "$HOME" && bash -se', { stdin: script, signal, timeoutMs: SETUP_SCRIPT_TIMEOUT_MS });
  if (result.exitCode === 0) return;
  const tail = `${result.stdout}\n${result.stderr}`.trim().split('\n').slice(-10).join('\n');
  throw new Error(`the setup script ${result.exitCode === null ? 'was killed' : `exited with ${result.exitCode}`}: ${tail}`);
}

/** An agent machine reports its id only when it connects; a clash with a live sibling is left unset. */
async function adoptHostId(deps: ComputerJobDeps, id: string, organizationId: string, ownerId: string, hostId: string) {
  const clash = await deps.db.computer.findFirst({ where: { organizationId, ownerId, liveHostId: hostId }, select: { id: true } });
  if (!clash) await deps.db.computer.update({ where: { id }, data: { hostId, liveHostId: hostId } });
}

/**
 * Ends provisioning at a step that failed: the step says why, every step after it is skipped with
 * `reason`, and the computer settles (to `error`).
 */
export async function failProvisioning(
  deps: Pick<ComputerJobDeps, 'db' | 'clock'>,
  computerId: string,
  failed: { step: string; err: unknown; startedAt?: Date },
  reason: string,
) {
  const at = deps.clock.now();
  await updateStep(deps.db, computerId, failed.step, { status: 'failed', error: messageOf(failed.err), startedAt: failed.startedAt, completedAt: at });
  await skipPendingSteps(deps.db, computerId, reason);
  await settleProvisioning(deps.db, computerId, at);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
