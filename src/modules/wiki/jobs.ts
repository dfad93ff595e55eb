import { z } from 'zod';
import type { Db } from '../../db/client.ts';
import { defineJob, defineJobKind } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { GenerateJobDeps } from './generate/job-deps.ts';
import { runGeneration } from './generate/run-generation.ts';

export const GENERATE_JOB = 'wiki.generate';

const spec = (runTimeoutSeconds: number) => ({
  name: GENERATE_JOB,
  payload: z.object({ wikiRunId: z.uuid() }),
  // Clone failures and size bounds are final at once (run-generation.ts); these retries cover
  // lost connections and killed workers, whose job comes back after the 10 s heartbeat.
  retryLimit: 2,
  retryDelaySeconds: 5,
  expireInSeconds: runTimeoutSeconds,
  heartbeatSeconds: 10,
  concurrency: 2,
});

/** The worker side: the generation job with its dependencies. */
export function wikiGenerateJob(deps: GenerateJobDeps) {
  const s = spec(deps.settings.runTimeoutSeconds);
  return defineJob({ ...s, handler: (payload, ctx) => runGeneration(deps, payload.wikiRunId, { ...ctx, retryLimit: s.retryLimit }) });
}

// The sending side needs the name and payload only (the worker's definition decides the policies).
const sendable = defineJobKind(spec(1800));

/** Enqueues the run's generation inside the caller's transaction; the job id is the run id. */
export async function enqueueGeneration(queue: Pick<JobQueue, 'send'>, wikiRunId: string, tx: Db): Promise<void> {
  await queue.send(sendable, { wikiRunId }, { tx, id: wikiRunId });
}
