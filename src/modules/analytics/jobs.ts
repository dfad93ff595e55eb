import { z } from 'zod';
import type { PrismaClient } from '../../db/client.ts';
import { defineJob } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import { rollupDue } from './rollup.ts';

export const ROLLUP_JOB = 'analytics.rollup';
/** 00:15 UTC: a quarter of an hour of slack for events of the day before that are still arriving. */
export const ROLLUP_CRON = '15 0 * * *';

/**
 * The daily roll-up: every organization's days through yesterday (UTC) that have no roll-up yet,
 * plus days that received events after their roll-up. Catching up on missed days is part of every
 * run, so a missed or failed run heals itself the next time.
 */
export function analyticsRollupJob(deps: { prisma: PrismaClient; clock: Clock }) {
  return defineJob({
    name: ROLLUP_JOB,
    payload: z.object({}),
    retryLimit: 5,
    retryDelaySeconds: 300,
    expireInSeconds: 3 * 3600,
    handler: async (_payload, ctx) => {
      const done = await rollupDue(deps);
      ctx.log.info({ organizations: done.length, days: done.reduce((n, o) => n + o.days.length, 0) }, 'analytics roll-up done');
    },
  });
}

/**
 * Registers the daily cron schedule (an upsert in pg-boss's schedule table, so every replica may
 * call it) and, with `catchUp`, sends one run now for days missed while nothing was running.
 */
export async function scheduleAnalyticsRollup(queue: JobQueue, opts: { catchUp?: boolean } = {}): Promise<void> {
  await queue.boss.schedule(ROLLUP_JOB, ROLLUP_CRON, {}, { tz: 'UTC', missed: 'once' });
  if (opts.catchUp) await queue.boss.send(ROLLUP_JOB, {});
}
