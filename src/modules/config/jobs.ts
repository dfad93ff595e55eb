import type { PrismaClient } from '../../db/client.ts';
import type { JobContext, JobDefinition } from '../../jobs/job.ts';
import { configDueJob, configReconcileJob } from './job-kinds.ts';
import type { Operations } from './kinds/types.ts';
import { reconcileSource, sendDueReconciles, type ReconcileDeps } from './reconcile.ts';

export interface ConfigJobDeps extends Omit<ReconcileDeps, 'operations' | 'queue' | 'publicUrl'> {
  /** The modules' services for one job run (they send follow-up jobs through the run's context). */
  operationsFor(ctx: JobContext): (db: PrismaClient) => Operations;
}

/** Config sources' reconciles, bound to their kinds (job-kinds.ts). */
export function configJobs(deps: ConfigJobDeps): JobDefinition[] {
  return [
    configReconcileJob.handledBy((p, ctx) =>
      reconcileSource({ ...deps, operations: deps.operationsFor(ctx), queue: { send: ctx.send }, publicUrl: () => undefined }, p.sourceId, ctx),
    ),
    configDueJob.handledBy((_p, ctx) => sendDueReconciles(deps, (sourceId) => ctx.send(configReconcileJob, { sourceId }))),
  ];
}
