import type { JobDefinition } from '../../jobs/job.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { computerSetupJob, installRunJob, metricsSampleJob } from './job-kinds.ts';
import { runInstallRun } from './install-run.ts';
import { dialInTimeoutJob } from './dial-in.ts';
import { expireDialIn } from './dial-in-timeout.ts';
import { managedComputerJobs } from './managed/jobs.ts';
import { sampleAllComputers } from './metrics.ts';
import { poolJobs } from './pool/jobs.ts';
import { runComputerSetup } from './setup/run.ts';

/** The computers module's handlers, bound to their kinds (job-kinds.ts, managed/job-kinds.ts). */
export function computerJobs(deps: ComputerJobDeps): JobDefinition[] {
  return [
    computerSetupJob.handledBy((p, ctx) => runComputerSetup(deps, p.computerId, ctx), {
      // A bulk's computers set up in parallel as their stacks come up, as many as provision at once.
      concurrency: Math.max(computerSetupJob.concurrency, deps.managed.concurrency),
    }),
    installRunJob.handledBy((p, ctx) => runInstallRun(deps, p.runId, ctx)),
    dialInTimeoutJob.handledBy((p, ctx) => expireDialIn(deps, p.computerId, ctx)),
    metricsSampleJob.handledBy(async (_p, ctx) => {
      await sampleAllComputers(deps, ctx);
    }),
    ...managedComputerJobs(deps),
    ...poolJobs(deps),
  ];
}
