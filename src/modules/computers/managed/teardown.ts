import type { JobContext } from '../../../jobs/job.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { end, transition } from '../lifecycle.ts';
import { STEP } from '../steps/names.ts';
import { moveStep } from '../steps/store.ts';
import { programConfig, stackProgramOf } from './program-input.ts';

/**
 * `pulumi destroy` and removal of a deleted computer's stack. A failure is recorded on the
 * `teardown` step and thrown, so the queue retries; after the last retry the reaper queues the
 * teardown again once its deadline passes. It is never forgotten.
 */
export async function runTeardown(deps: ComputerJobDeps, computerId: string, ctx: JobContext): Promise<void> {
  const computer = await deps.db.computer.findFirst({ where: { id: computerId, deletedAt: { not: null }, operation: 'teardown' } });
  if (!computer) return;
  const now = () => deps.clock.now();
  // A retried teardown starts its step again from where the last attempt left it.
  await moveStep(deps.db, computerId, STEP.teardown, ['pending', 'running', 'failed'], { status: 'running', startedAt: now(), completedAt: null });
  try {
    // Without its provider (or program) the stack stays, and the teardown is retried until one is there.
    const program = await stackProgramOf(deps, computer, ctx.signal, { inspect: false });
    await deps.provisioner.stacks.destroy(program, programConfig(computer), { signal: ctx.signal, log: ctx.log });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    await moveStep(deps.db, computerId, STEP.teardown, ['running'], { status: 'failed', error: `attempt ${ctx.attempt}: ${message}`, completedAt: now() });
    await transition(deps.db, computerId, { from: { operation: 'teardown' }, to: { operationError: message } });
    throw err;
  }
  await transition(deps.db, computerId, { from: { operation: 'teardown' }, to: { ...end(null), powerState: null }, event: { tornDown: true } });
  await moveStep(deps.db, computerId, STEP.teardown, ['running'], { status: 'completed', error: null, completedAt: now() });
  ctx.log.info({ computerId }, 'computer torn down');
}
