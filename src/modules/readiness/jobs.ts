import type { SecretBox } from '../../lib/secret-box.ts';
import { z } from 'zod';
import type { Db, PrismaClient } from '../../db/client.ts';
import { defineJobKind, type JobDefinition } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SshClient } from '../../ssh/index.ts';
import type { ResolveComputerTarget } from '../../repos/computer-target.ts';
import { runEvaluation } from './run-evaluation.ts';

/** Clone, evaluate, store the report, settle the evaluation. */
const readinessEvaluateJob = defineJobKind({
  name: 'readiness.evaluate',
  payload: z.object({ evaluationId: z.uuid() }),
  // Clone failures are final at once (run-evaluation.ts); these retries cover lost connections
  // and crashed workers.
  retryLimit: 2,
  retryDelaySeconds: 30,
  expireInSeconds: 30 * 60,
  concurrency: 2,
});

export interface EvaluateJobDeps {
  prisma: PrismaClient;
  clock: Clock;
  /** Parent of the local scratch directories: `<data dir>/readiness`. */
  scratchRoot: string;
  /** Opens the organization's forge tokens: clones of private repositories from the control plane use them. */
  secrets: SecretBox;
  /** Clones made by the control plane itself (no computerId) go through it. */
  egress: Pick<EgressGuard, 'check'>;
  /** How to reach computers; without it evaluations naming a computer fail with a reason. */
  computers?: { ssh: SshClient; resolveTarget: ResolveComputerTarget };
}

export function readinessJobs(deps: EvaluateJobDeps): JobDefinition[] {
  return [readinessEvaluateJob.handledBy((payload, ctx) => runEvaluation(deps, payload.evaluationId, ctx))];
}

/** Enqueues the evaluation inside the caller's transaction; the job id is the evaluation id. */
export async function enqueueEvaluation(queue: Pick<JobQueue, 'send'>, evaluationId: string, tx: Db): Promise<void> {
  await queue.send(readinessEvaluateJob, { evaluationId }, { tx, id: evaluationId });
}
