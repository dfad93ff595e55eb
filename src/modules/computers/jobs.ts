import { z } from 'zod';
import { defineJobKind, type JobDefinition, type JobSchedule } from '../../jobs/job.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { runInstallRun } from './install-run.ts';
import { computersReapJob, managedComputerJobs } from './managed/jobs.ts';
import { sampleAllComputers } from './metrics.ts';
import { poolConvergeJob, poolJobs } from './pool/jobs.ts';
import { runComputerSetup } from './setup.ts';

/** Connect (agent machines), verify, clone each repository, then install dependencies if asked. */
export const computerSetupJob = defineJobKind({
  name: 'computers.setup',
  payload: z.object({ computerId: z.string() }),
  // An agent machine is reachable once its agent dials in, usually within seconds of registering:
  // short retries for two minutes cover that.
  retryLimit: 40,
  retryDelaySeconds: 3,
  expireInSeconds: 3600,
  concurrency: 4,
  serializeBy: (p) => p.computerId,
});

/** One repository's dependency installation, one of an install session's runs. */
export const installRunJob = defineJobKind({
  name: 'computers.install-run',
  payload: z.object({ runId: z.string() }),
  retryLimit: 2,
  retryDelaySeconds: 15,
  expireInSeconds: 3600,
  concurrency: 4,
});

/** Samples every active computer's CPU, memory and disk, and prunes samples past retention. */
export const metricsSampleJob = defineJobKind({
  name: 'computers.sample-metrics',
  payload: z.object({}),
  retryLimit: 0,
  expireInSeconds: 240,
});

export function computerJobs(deps: ComputerJobDeps): JobDefinition[] {
  return [
    computerSetupJob.handledBy((p, ctx) => runComputerSetup(deps, p.computerId, ctx, computerSetupJob.retryLimit)),
    installRunJob.handledBy((p, ctx) => runInstallRun(deps, p.runId, ctx, installRunJob.retryLimit)),
    metricsSampleJob.handledBy(async (_p, ctx) => {
      await sampleAllComputers(deps, ctx);
    }),
    ...managedComputerJobs(deps),
    ...poolJobs(deps),
  ];
}

export const computerSchedules: JobSchedule[] = [
  { kind: metricsSampleJob, cron: '*/5 * * * *', payload: {} },
  { kind: computersReapJob, cron: '* * * * *', payload: {} },
  // At start too: a restarted control plane brings its pools back to size at once.
  { kind: poolConvergeJob, cron: '* * * * *', payload: { healthCheck: true }, sendAtStart: true },
];
