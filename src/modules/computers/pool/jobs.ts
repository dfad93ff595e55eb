import { z } from 'zod';
import { defineJobKind, type JobDefinition } from '../../../jobs/job.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { convergePools } from './converge.ts';

/**
 * Brings warm pools to their size (converge.ts): every minute for every organization with a pool,
 * health checks included; and for one organization after a claim or a size change, without them.
 */
export const poolConvergeJob = defineJobKind({
  name: 'computers.pool-converge',
  payload: z.object({ organizationId: z.string().min(1).optional(), healthCheck: z.boolean().optional() }),
  retryLimit: 1,
  retryDelaySeconds: 5,
  expireInSeconds: 300,
});

/** Its schedule (every minute, with health checks) is in computerSchedules. */
export function poolJobs(deps: ComputerJobDeps): JobDefinition[] {
  return [poolConvergeJob.handledBy((p, ctx) => convergePools(deps, ctx, p))];
}
