import { z } from 'zod';
import { defineJobKind } from '../../../jobs/job.ts';

/**
 * Brings warm pools to their size (converge.ts): every minute and at start for every organization
 * with a pool, health checks included (computerSchedules); for one organization after a claim or a
 * size change, without them.
 */
export const poolConvergeJob = defineJobKind({
  name: 'computers.pool-converge',
  payload: z.object({ organizationId: z.string().min(1).optional(), healthCheck: z.boolean().optional() }),
  retryLimit: 1,
  retryDelaySeconds: 5,
  expireInSeconds: 300,
});
