import { z } from 'zod';
import type { PrismaClient } from '../../db/client.ts';
import { defineJobKind, type JobDefinition, type JobSchedule } from '../../jobs/job.ts';
import type { Clock } from '../../lib/clock.ts';
import { purgeExpiredEvents } from './retention.ts';

/** Removes stored events past their retention. */
const eventsPurgeJob = defineJobKind({
  name: 'events.purge',
  payload: z.object({}),
  retryLimit: 3,
  retryDelaySeconds: 60,
  expireInSeconds: 600,
});

/** Every ten minutes: the window stays within ten minutes of its configured length. */
export const eventSchedules: JobSchedule[] = [{ kind: eventsPurgeJob, cron: '*/10 * * * *', payload: {} }];

export function eventJobs(deps: { db: PrismaClient; clock: Clock; retentionMs: number }): JobDefinition[] {
  return [
    eventsPurgeJob.handledBy(async (_payload, ctx) => {
      const purged = await purgeExpiredEvents(deps.db, new Date(deps.clock.now().getTime() - deps.retentionMs));
      if (purged > 0) ctx.log.info({ purged }, 'purged events past their retention');
    }),
  ];
}
