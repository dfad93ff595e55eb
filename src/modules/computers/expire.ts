import type { JobContext } from '../../jobs/job.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { deadlineOf, end, LIFECYCLE, transition, type Operation } from './lifecycle.ts';
import { computerStackJob } from './managed/job-kinds.ts';
import { retirePoolComputer } from './pool/retire.ts';
import { moveSteps } from './steps/store.ts';

/**
 * Ends computer `computerId`'s operation if its deadline has passed, as LIFECYCLE declares its
 * expiry, after re-checking under a row lock (another replica's reaper, the pool's convergence,
 * or the operation itself finishing may have got there first). Answers the operation it ended,
 * if any. The reaper and the warm pool both ask this; neither decides what an expiry means.
 */
export async function expireOperation(
  deps: Pick<ComputerJobDeps, 'db' | 'managed'>,
  queue: Pick<JobContext, 'send'>,
  computerId: string,
  now: Date,
): Promise<Operation | undefined> {
  return deps.db.$transaction(async (tx) => {
    const [row] = await tx.$queryRaw<{ operation: Operation | null; operation_deadline: Date | null }[]>`
      SELECT operation, operation_deadline FROM computers WHERE id = ${computerId} FOR UPDATE SKIP LOCKED`;
    const operation = row?.operation;
    if (!operation || !row.operation_deadline || row.operation_deadline >= now) return undefined;
    const late = `${operation} did not finish by ${row.operation_deadline.toISOString()}`;
    const from = { operation };
    switch (LIFECYCLE[operation].expiry) {
      case 'fail':
        await moveSteps(tx, computerId, ['running'], { status: 'failed', error: `timed out: ${late}`, completedAt: now });
        await moveSteps(tx, computerId, ['pending'], { status: 'skipped', error: 'provisioning timed out' });
        await transition(tx, computerId, { from, to: { status: 'error', ...end(late) }, event: { status: 'error', detail: { error: late } } });
        break;
      case 'drop':
        await transition(tx, computerId, { from, to: end(late) });
        break;
      case 'retry':
        if (operation === 'claim') throw new Error('a claim is never retried');
        await transition(tx, computerId, { from, to: { operationDeadline: deadlineOf(operation, now, deps.managed) } });
        await queue.send(computerStackJob, { computerId, operation }, { tx });
        break;
      case 'destroy':
        await retirePoolComputer(tx, { queue, managed: deps.managed }, computerId, operation, now);
        break;
    }
    return operation;
  });
}
