import type { JobContext } from '../../../jobs/job.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { end, transition } from '../lifecycle.ts';
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
    const powerState = running ? 'running' : 'paused';
    await transition(deps.db, computerId, {
      from: { operation },
      to: { powerState, ...end(), ...(running ? { lastActiveAt: deps.clock.now() } : {}) },
      event: { powerState },
    });
    ctx.log.info({ computerId, operation }, running ? 'computer resumed' : 'computer paused');
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    ctx.log.warn({ err, computerId, operation }, 'changing the power state failed');
    await transition(deps.db, computerId, { from: { operation }, to: end(err instanceof Error ? err.message : String(err)) });
  }
}
