import { z } from 'zod';
import type { PrismaClient } from '../../db/client.ts';
import { defineJobKind, type JobDefinition, type JobSchedule } from '../../jobs/job.ts';
import type { Clock } from '../../lib/clock.ts';
import { rollupDue } from './rollup.ts';

/**
 * The daily roll-up: every organization's days through yesterday (UTC) that have no roll-up yet,
 * plus days that received events after their roll-up. Catching up on missed days is part of every
 * run, so a missed or failed run heals itself the next time.
 */
export const analyticsRollupJob = defineJobKind({
  name: 'analytics.rollup',
  payload: z.object({}),
  retryLimit: 5,
  retryDelaySeconds: 300,
  expireInSeconds: 3 * 3600,
});

/**
 * 00:15 UTC: a quarter of an hour of slack for events of the day before that are still arriving.
 * Days missed while nothing ran are caught up by one run at start (`sendAtStart`).
 */
export const analyticsSchedules: JobSchedule[] = [{ kind: analyticsRollupJob, cron: '15 0 * * *', payload: {}, missed: 'once', sendAtStart: true }];

export function analyticsJobs(deps: { prisma: PrismaClient; clock: Clock }): JobDefinition[] {
  return [
    analyticsRollupJob.handledBy(async (_payload, ctx) => {
      const done = await rollupDue(deps);
      ctx.log.info({ organizations: done.length, days: done.reduce((n, o) => n + o.days.length, 0) }, 'analytics roll-up done');
    }),
  ];
}
