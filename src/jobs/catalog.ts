import type { PrismaClient } from '../db/client.ts';
import type { Clock } from '../lib/clock.ts';
import { analyticsRollupJob } from '../modules/analytics/jobs.ts';
import type { JobDefinition } from './job.ts';

/** What job handlers need; the process that runs the worker provides it. */
export interface JobDeps {
  prisma: PrismaClient;
  clock: Clock;
}

/**
 * Every background job the control plane runs. Modules add their definitions here; the server's
 * in-process worker and `agentplane worker` both work this list.
 */
export function jobsFor(deps: JobDeps): JobDefinition[] {
  return [analyticsRollupJob(deps)];
}
