import type { Database } from '../db/client.ts';
import { createJobQueue, type JobQueue, type JobQueueOptions } from './queue.ts';

export type WorkerOptions = JobQueueOptions & { db: Database };

export interface RunningWorker {
  /** The started queue; the server sends through it too, so one process runs one pg-boss. */
  queue: JobQueue;
  /** Graceful: running handlers get up to `timeoutMs` to finish, then are aborted and retried elsewhere. */
  stop(timeoutMs: number): Promise<void>;
}

/** Starts the job queue and a worker for every definition: in the server process, or `agentplane worker`. */
export async function startWorker(opts: WorkerOptions): Promise<RunningWorker> {
  const { db, ...queueOpts } = opts;
  const queue = createJobQueue(db, queueOpts);
  await queue.start();
  await queue.work();
  opts.log.info({ jobs: opts.jobs.map((j) => j.name) }, 'worker started');
  return { queue, stop: (timeoutMs) => queue.stop({ timeoutMs }) };
}
