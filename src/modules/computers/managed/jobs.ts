import type { JobDefinition } from '../../../jobs/job.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { computersReapJob, computerStackJob } from './job-kinds.ts';
import { runPowerChange } from './power.ts';
import { runProvision } from './provision.ts';
import { reapComputers } from './reaper.ts';
import { runTeardown } from './teardown.ts';
import { runUpdate } from '../update-run.ts';

/** The stack operations' handlers, bound to their kinds (job-kinds.ts). */
export function managedComputerJobs(deps: ComputerJobDeps): JobDefinition[] {
  const stack = computerStackJob.handledBy(
    async (p, ctx) => {
      if (p.operation === 'provision') return runProvision(deps, p.computerId, ctx);
      if (p.operation === 'teardown') return runTeardown(deps, p.computerId, ctx);
      if (p.operation === 'update') return runUpdate(deps, p.computerId, p.templateVersionId, ctx);
      return runPowerChange(deps, p.computerId, p.operation, ctx);
    },
    // Bounded per process: bulk creation provisions this many computers in parallel.
    { concurrency: deps.managed.concurrency },
  );
  return [
    stack,
    computersReapJob.handledBy(async (_p, ctx) => {
      await reapComputers(deps, ctx);
    }),
  ];
}
