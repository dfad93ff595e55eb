import { z } from 'zod';
import { defineJobKind, type JobDefinition } from '../../../jobs/job.ts';
import type { JobQueue } from '../../../jobs/queue.ts';
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
export const POOL_CRON = '* * * * *';

export function poolJobs(deps: ComputerJobDeps): JobDefinition[] {
  return [poolConvergeJob.handledBy((p, ctx) => convergePools(deps, ctx, p))] as JobDefinition[];
}

/** Every replica may call this: the schedule is an upsert in pg-boss's table. */
export async function schedulePoolConvergence(queue: JobQueue): Promise<void> {
  await queue.boss.schedule(poolConvergeJob.name, POOL_CRON, { healthCheck: true }, { tz: 'UTC' });
}
