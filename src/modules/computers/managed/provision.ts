import type { JobContext } from '../../../jobs/job.ts';
import { describeHostKey } from '../../../ssh/index.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { computerSetupJob } from '../job-kinds.ts';
import { transition } from '../lifecycle.ts';
import { settleProvisioning } from '../settle.ts';
import { runSteps, type Step } from '../steps/runner.ts';
import { STEP } from '../steps/names.ts';
import { provisioningSteps } from '../steps/store.ts';
import type { ProgramEndpoint, StackProgram } from '../../../provisioning/programs/index.ts';
import { programConfig, stackProgramOf } from './program-input.ts';

/**
 * Provisioning's stack operation: `pulumi up` of the computer's stack, the infrastructure step.
 * Completing it stores how to reach the computer and queues its set-up (SSH, workspace, clones,
 * dependencies) as a job of its own, in one transaction: the stack lock is held for Pulumi only.
 * A failed `up` leaves the computer in `error` with the step's error; what was created stays
 * tracked in the stack for the teardown (a template's program is destroyed at once instead). A run
 * cut short (the control plane killed) is run again by the queue and resumes here.
 */
export async function runProvision(deps: ComputerJobDeps, computerId: string, ctx: JobContext): Promise<void> {
  const computer = await deps.db.computer.findFirst({ where: { id: computerId, deletedAt: null, operation: 'provision' } });
  if (!computer) return;
  const step = await deps.db.provisioningStep.findUnique({ where: { computerId_id: { computerId, id: STEP.infrastructure } } });
  if (step?.status === 'completed') {
    // A retried run after the stack came up: the set-up was queued with it; queueing it again is
    // harmless (serialized per computer, idempotent by step) and covers a set-up lost meanwhile.
    await ctx.send(computerSetupJob, { computerId });
    return;
  }
  const infrastructure: Step = {
    id: STEP.infrastructure,
    stopsOnFailure: 'the computer could not be created',
    run: async ({ signal, resumed }) => {
      const program = await stackProgramOf(deps, computer, signal);
      const endpoint = await upOrClean(deps, ctx, program, programConfig(computer, true), { signal, fresh: !resumed });
      if (endpoint.kind !== 'ssh') {
        throw new Error('the program outputs "agent: true", but this control plane does not take dial-in machines yet');
      }
      const hostKeyFingerprint = fingerprintOfLine(endpoint.hostKey);
      return {
        complete: async (tx) => {
          const reached = await transition(tx, computerId, {
            from: { operation: 'provision' },
            to: {
              connectionType: 'direct',
              sshHost: endpoint.host,
              sshPort: endpoint.port,
              remoteUser: endpoint.user,
              hostKeyFingerprint,
              powerState: 'running',
              programPausable: endpoint.pausable,
            },
          });
          if (reached) await ctx.send(computerSetupJob, { computerId }, { tx });
        },
      };
    },
  };
  const result = await runSteps(provisioningSteps(deps.db, computerId), [infrastructure], {
    signal: ctx.signal,
    now: () => deps.clock.now(),
    provider: computer.providerType,
    warn: (_msg, err) => ctx.log.warn({ err, computerId }, 'creating the computer failed'),
  });
  if (result === 'failed') await settleProvisioning(deps.db, computerId, deps.clock.now());
}

/**
 * `pulumi up`; when a template's program fails (Pulumi's error, or outputs that miss the
 * contract), its stack is destroyed at once so nothing is left behind, and the error stands. A
 * built-in's stack stays for the teardown, as before; an interrupted run (abort) is retried as is.
 */
async function upOrClean(
  deps: ComputerJobDeps,
  ctx: JobContext,
  program: StackProgram,
  config: ReturnType<typeof programConfig>,
  opts: { signal: AbortSignal; fresh: boolean },
): Promise<ProgramEndpoint> {
  try {
    return await deps.provisioner.stacks.up(program, config, { ...opts, log: ctx.log });
  } catch (err) {
    if (program.kind !== 'yaml' || opts.signal.aborted) throw err;
    await deps.provisioner.stacks.destroy(program, config, { signal: opts.signal, log: ctx.log }).catch((cleanup: unknown) => {
      ctx.log.warn({ err: cleanup, computerId: config.computerId }, "destroying a failed program's stack failed; the teardown retries it");
    });
    throw err;
  }
}

/** The `SHA256:...` fingerprint of an OpenSSH host key line (`type base64 [comment]`). */
export function fingerprintOfLine(line: string): string {
  const blob = line.trim().split(/\s+/)[1];
  if (!blob) throw new Error(`the provider reported no usable host key: ${JSON.stringify(line)}`);
  return describeHostKey(Buffer.from(blob, 'base64')).fingerprint;
}
