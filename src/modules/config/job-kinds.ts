import { z } from 'zod';
import { defineJobKind, type JobSchedule } from '../../jobs/job.ts';

/**
 * Reads a config source's repository and applies it (reconcile.ts). Serialized per source, so
 * two replicas never reconcile one source at once; a push and the interval just queue behind.
 */
export const configReconcileJob = defineJobKind({
  name: 'config.reconcile',
  payload: z.object({ sourceId: z.string().min(1) }),
  retryLimit: 0,
  expireInSeconds: 600,
  serializeBy: (p) => p.sourceId,
});

/** Every minute: sends a reconcile for each source whose interval has passed since its last attempt. */
export const configDueJob = defineJobKind({
  name: 'config.reconcile-due',
  payload: z.object({}),
  retryLimit: 0,
  expireInSeconds: 60,
});

export const configSchedules: JobSchedule[] = [{ kind: configDueJob, cron: '* * * * *', payload: {} }];
