import { z } from 'zod';
import type { Db } from '../../db/client.ts';
import { defineJobKind, type JobDefinition } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import { DEFAULT_WIKI_JOB_SETTINGS, type GenerateJobDeps } from './generate/job-deps.ts';
import { runGeneration } from './generate/run-generation.ts';

/**
 * Generates a wiki run. Clone failures and size bounds are final at once (run-generation.ts);
 * these retries cover lost connections and killed workers, whose job comes back after the 10 s
 * heartbeat. The worker sets `expireInSeconds` from the configured run deadline.
 */
const wikiGenerateJob = defineJobKind({
  name: 'wiki.generate',
  payload: z.object({ wikiRunId: z.uuid() }),
  retryLimit: 2,
  retryDelaySeconds: 5,
  expireInSeconds: DEFAULT_WIKI_JOB_SETTINGS.runTimeoutSeconds,
  heartbeatSeconds: 10,
  concurrency: 2,
});

export function wikiJobs(deps: GenerateJobDeps): JobDefinition[] {
  return [
    wikiGenerateJob.handledBy((payload, ctx) => runGeneration(deps, payload.wikiRunId, ctx), {
      expireInSeconds: deps.settings.runTimeoutSeconds,
    }),
  ];
}

/** Enqueues the run's generation inside the caller's transaction; the job id is the run id. */
export async function enqueueGeneration(queue: Pick<JobQueue, 'send'>, wikiRunId: string, tx: Db): Promise<void> {
  await queue.send(wikiGenerateJob, { wikiRunId }, { tx, id: wikiRunId });
}
