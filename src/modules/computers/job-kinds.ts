import { z } from 'zod';
import { defineJobKind, type JobSchedule } from '../../jobs/job.ts';
import { computersReapJob } from './managed/job-kinds.ts';
import { poolConvergeJob } from './pool/job-kinds.ts';

/**
 * The set-up of a computer once it is reachable (connect, verify, copy, clone, setup script,
 * install): a byom computer's from its registration, a managed one's once its infrastructure
 * exists. Retries of the job are for runs cut short (a killed worker, an expired run): how long a
 * step keeps trying a machine is the step's own rule (the SSH layer's budget), whichever job runs it.
 */
export const computerSetupJob = defineJobKind({
  name: 'computers.setup',
  payload: z.object({ computerId: z.string() }),
  retryLimit: 3,
  retryDelaySeconds: 5,
  expireInSeconds: 3600,
  // A killed worker's set-up comes back quickly; the runner resumes it at the step it reached.
  heartbeatSeconds: 10,
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

/** The computers module's cron schedules (UTC). */
export const computerSchedules: JobSchedule[] = [
  { kind: metricsSampleJob, cron: '*/5 * * * *', payload: {} },
  { kind: computersReapJob, cron: '* * * * *', payload: {} },
  // At start too: a restarted control plane brings its pools back to size at once.
  { kind: poolConvergeJob, cron: '* * * * *', payload: { healthCheck: true }, sendAtStart: true },
];
