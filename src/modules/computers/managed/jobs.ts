import type { JobDefinition } from '../../../jobs/job.ts';
import type { JobQueue } from '../../../jobs/queue.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { computersReapJob, computerStackJob, REAP_CRON } from './job-kinds.ts';
import { runPowerChange } from './power.ts';
import { runProvision } from './provision.ts';
import { reapComputers } from './reaper.ts';
import { runTeardown } from './teardown.ts';

export function managedComputerJobs(deps: ComputerJobDeps): JobDefinition[] {
  const stack = computerStackJob.handledBy(async (p, ctx) => {
    if (p.operation === 'provision') return runProvision(deps, p.computerId, ctx);
    if (p.operation === 'teardown') return runTeardown(deps, p.computerId, ctx);
    return runPowerChange(deps, p.computerId, p.operation, ctx);
  });
  return [
    // Bounded per process: bulk creation provisions this many computers in parallel.
    { ...stack, concurrency: deps.managed.concurrency },
    computersReapJob.handledBy(async (_p, ctx) => {
      await reapComputers(deps, ctx);
    }),
  ] as JobDefinition[];
}

/** Every replica may call this: the schedule is an upsert in pg-boss's table. */
export async function scheduleComputerReaper(queue: JobQueue): Promise<void> {
  await queue.boss.schedule(computersReapJob.name, REAP_CRON, {}, { tz: 'UTC' });
}
