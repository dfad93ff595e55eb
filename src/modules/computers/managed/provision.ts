import type { JobContext } from '../../../jobs/job.ts';
import { describeHostKey } from '../../../ssh/index.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { computerSetupJob } from '../job-kinds.ts';
import { transition } from '../lifecycle.ts';
import { settleProvisioning } from '../settle.ts';
import { runSteps, type Step } from '../steps/runner.ts';
import { STEP } from '../steps/names.ts';
import { provisioningSteps } from '../steps/store.ts';
import { programInput, providerOf } from './program-input.ts';

/**
 * Provisioning's stack operation: `pulumi up` of the computer's stack, the infrastructure step.
 * Completing it stores how to reach the computer and queues its set-up (SSH, workspace, clones,
 * dependencies) as a job of its own, in one transaction: the stack lock is held for Pulumi only.
 * A failed `up` leaves the computer in `error` with the step's error; what was created stays
 * tracked in the stack for the teardown. A run cut short (the control plane killed) is run again
 * by the queue and resumes here.
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
      const endpoint = await deps.provisioner.stacks.up(providerOf(deps.provisioner.providers, computer), programInput(computer, true), {
        signal,
        log: ctx.log,
        fresh: !resumed,
      });
      const hostKeyFingerprint = fingerprintOfLine(endpoint.hostPublicKey);
      return {
        complete: async (tx) => {
          const reached = await transition(tx, computerId, {
            from: { operation: 'provision' },
            to: {
              connectionType: 'direct',
              sshHost: endpoint.host,
              sshPort: endpoint.port,
              remoteUser: endpoint.username,
              hostKeyFingerprint,
              powerState: 'running',
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

function fingerprintOfLine(line: string): string {
  const blob = line.trim().split(/\s+/)[1];
  if (!blob) throw new Error(`the provider reported no usable host key: ${JSON.stringify(line)}`);
  return describeHostKey(Buffer.from(blob, 'base64')).fingerprint;
}
