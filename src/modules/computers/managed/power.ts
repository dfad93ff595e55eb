import type { JobContext } from '../../../jobs/job.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { computerEvents } from '../computer-events.ts';
import { targetFor } from '../machines.ts';
import { programInput, providerOf } from './program-input.ts';
import { SSH_WAIT_MS } from './settings.ts';
import { waitForSsh } from '../wait-for-ssh.ts';

/**
 * Pause or resume: `pulumi up` with `running` flipped. A resume ends once SSH answers again. A
 * failure leaves the power state as it was and says why in `operationError`.
 */
export async function runPowerChange(deps: ComputerJobDeps, computerId: string, operation: 'pause' | 'resume', ctx: JobContext) {
  const computer = await deps.db.computer.findFirst({ where: { id: computerId, deletedAt: null, operation } });
  if (!computer) return;
  const running = operation === 'resume';
  try {
    await deps.provisioner.stacks.up(providerOf(deps.provisioner.providers, computer), programInput(computer, running), { signal: ctx.signal, log: ctx.log });
    if (running) {
      const target = await targetFor(deps, { ...computer, powerState: 'running' });
      await waitForSsh(deps.ssh, target, { signal: ctx.signal, timeoutMs: SSH_WAIT_MS });
    }
    await deps.db.$transaction(async (tx) => {
      const { count } = await tx.computer.updateMany({
        where: { id: computerId, operation },
        data: { powerState: running ? 'running' : 'paused', operation: null, operationDeadline: null, ...(running ? { lastActiveAt: deps.clock.now() } : {}) },
      });
      if (count) await computerEvents.power(tx, computerId, running ? 'running' : 'paused');
    });
    ctx.log.info({ computerId, operation }, running ? 'computer resumed' : 'computer paused');
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    ctx.log.warn({ err, computerId, operation }, 'changing the power state failed');
    await deps.db.computer.updateMany({
      where: { id: computerId, operation },
      data: { operation: null, operationDeadline: null, operationError: err instanceof Error ? err.message : String(err) },
    });
  }
}
