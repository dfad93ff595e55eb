import type { JobDefinition } from '../../../jobs/job.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { convergePools } from './converge.ts';
import { poolConvergeJob } from './job-kinds.ts';

/** The pool's handler, bound to its kind (job-kinds.ts). */
export function poolJobs(deps: ComputerJobDeps): JobDefinition[] {
  return [poolConvergeJob.handledBy((p, ctx) => convergePools(deps, ctx, p))];
}
