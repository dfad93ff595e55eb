import { z } from 'zod';
import type { PrismaClient } from '../../db/client.ts';
import { defineJob, type JobDefinition } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import { purgeExpiredEvents } from './retention.ts';

export const EVENTS_PURGE_JOB = 'events.purge';
/** Every ten minutes: the window stays within ten minutes of its configured length. */
export const EVENTS_PURGE_CRON = '*/10 * * * *';

export function eventJobs(deps: { db: PrismaClient; clock: Clock; retentionMs: number }): JobDefinition[] {
  return [
    defineJob({
      name: EVENTS_PURGE_JOB,
      payload: z.object({}),
      retryLimit: 3,
      retryDelaySeconds: 60,
      expireInSeconds: 600,
      handler: async (_payload, ctx) => {
        const purged = await purgeExpiredEvents(deps.db, new Date(deps.clock.now().getTime() - deps.retentionMs));
        if (purged > 0) ctx.log.info({ purged }, 'purged events past their retention');
      },
    }),
  ] as JobDefinition[];
}

/** Registers the purge schedule (an upsert: every replica may call it). */
export async function scheduleEventJobs(queue: JobQueue): Promise<void> {
  await queue.boss.schedule(EVENTS_PURGE_JOB, EVENTS_PURGE_CRON, {}, { tz: 'UTC' });
}
