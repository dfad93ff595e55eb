import type { JobContext } from '../../../jobs/job.ts';
import { describeHostKey } from '../../../provisioning/ssh/index.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { failProvisioning, runComputerSetup } from '../setup.ts';
import { STEP, updateStep } from '../steps.ts';
import { computerStackJob } from './jobs.ts';
import { programInput, providerOf } from './program-input.ts';

/**
 * Provisioning: `pulumi up` of the computer's stack (the infrastructure step), then the set-up
 * every computer has (SSH, workspace, clones, dependencies). A failed `up` leaves the computer in
 * `error` with the step's error; what was created stays tracked in the stack for the teardown.
 * A run cut short (the control plane killed) is run again by the queue and resumes here.
 */
export async function runProvision(deps: ComputerJobDeps, computerId: string, ctx: JobContext): Promise<void> {
  const computer = await deps.db.computer.findFirst({ where: { id: computerId, deletedAt: null, operation: 'provision' } });
  if (!computer) return;
  const now = () => deps.clock.now();
  const step = await deps.db.provisioningStep.findUnique({ where: { computerId_id: { computerId, id: STEP.infrastructure } } });
  if (step && step.status !== 'completed') {
    await updateStep(deps.db, computerId, STEP.infrastructure, { status: 'running', error: null, startedAt: step.startedAt ?? now() });
    try {
      const endpoint = await deps.provisioner.stacks.up(providerOf(deps.provisioner.providers, computer), programInput(computer, true), {
        signal: ctx.signal,
        log: ctx.log,
        fresh: !step.startedAt,
      });
      const { count } = await deps.db.computer.updateMany({
        where: { id: computerId, operation: 'provision' },
        data: {
          connectionType: 'direct',
          sshHost: endpoint.host,
          sshPort: endpoint.port,
          remoteUser: endpoint.username,
          hostKeyFingerprint: fingerprintOfLine(endpoint.hostPublicKey),
          powerState: 'running',
        },
      });
      if (count === 0) return;
      await updateStep(deps.db, computerId, STEP.infrastructure, { status: 'completed', completedAt: now() });
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      ctx.log.warn({ err, computerId }, 'creating the computer failed');
      await failProvisioning(deps, computerId, { step: STEP.infrastructure, err }, 'the computer could not be created');
      return;
    }
  }
  await runComputerSetup(deps, computerId, ctx, computerStackJob.retryLimit);
}

function fingerprintOfLine(line: string): string {
  const blob = line.trim().split(/\s+/)[1];
  if (!blob) throw new Error(`the provider reported no usable host key: ${JSON.stringify(line)}`);
  return describeHostKey(Buffer.from(blob, 'base64')).fingerprint;
}
