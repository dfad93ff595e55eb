import type { JobDefinition } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { computerSetupJob, installRunJob, METRICS_CRON, metricsSampleJob } from './job-kinds.ts';
import { runInstallRun } from './install-run.ts';
import { managedComputerJobs } from './managed/jobs.ts';
import { sampleAllComputers } from './metrics.ts';
import { runComputerSetup } from './setup/run.ts';

export function computerJobs(deps: ComputerJobDeps): JobDefinition[] {
  const setup = computerSetupJob.handledBy((p, ctx) => runComputerSetup(deps, p.computerId, ctx));
  return [
    // A bulk's computers set up in parallel as their stacks come up, as many as provision at once.
    { ...setup, concurrency: Math.max(setup.concurrency, deps.managed.concurrency) },
    installRunJob.handledBy((p, ctx) => runInstallRun(deps, p.runId, ctx)),
    metricsSampleJob.handledBy(async (_p, ctx) => {
      await sampleAllComputers(deps, ctx);
    }),
    ...managedComputerJobs(deps),
  ] as JobDefinition[];
}

/** Every replica may call this: the schedule is an upsert in pg-boss's table. */
export async function scheduleMetricsSampling(queue: JobQueue): Promise<void> {
  await queue.boss.schedule(metricsSampleJob.name, METRICS_CRON, {}, { tz: 'UTC' });
}
