import { z } from 'zod';
import type { Db, PrismaClient } from '../../db/client.ts';
import { defineJob } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SshClient } from '../../provisioning/ssh/index.ts';
import type { ResolveComputerTarget } from './computer-target.ts';
import { runEvaluation } from './run-evaluation.ts';

export const EVALUATE_JOB = 'readiness.evaluate';

const spec = {
  name: EVALUATE_JOB,
  payload: z.object({ evaluationId: z.uuid() }),
  // Clone failures are final at once (run-evaluation.ts); these retries cover lost connections
  // and crashed workers.
  retryLimit: 2,
  retryDelaySeconds: 30,
  expireInSeconds: 30 * 60,
  concurrency: 2,
};

export interface EvaluateJobDeps {
  prisma: PrismaClient;
  clock: Clock;
  /** Parent of the local scratch directories: `<data dir>/readiness`. */
  scratchRoot: string;
  /** Clones made by the control plane itself (no computerId) go through it. */
  egress: Pick<EgressGuard, 'check'>;
  /** How to reach computers; without it evaluations naming a computer fail with a reason. */
  computers?: { ssh: SshClient; resolveTarget: ResolveComputerTarget };
}

/** The worker side: clone, evaluate, store the report, settle the evaluation. */
export function readinessEvaluateJob(deps: EvaluateJobDeps) {
  return defineJob({
    ...spec,
    handler: (payload, ctx) => runEvaluation(deps, payload.evaluationId, { ...ctx, retryLimit: spec.retryLimit }),
  });
}

// The sending side needs the definition's name and payload only; the queue refuses to send jobs
// no worker definition registers, so this never runs.
const sendable = defineJob({
  ...spec,
  handler: () => Promise.reject(new Error(`${EVALUATE_JOB} runs through readinessEvaluateJob(deps)`)),
});

/** Enqueues the evaluation inside the caller's transaction; the job id is the evaluation id. */
export async function enqueueEvaluation(queue: Pick<JobQueue, 'send'>, evaluationId: string, tx: Db): Promise<void> {
  await queue.send(sendable, { evaluationId }, { tx, id: evaluationId });
}
