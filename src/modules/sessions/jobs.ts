import { z } from 'zod';
import type { Db } from '../../db/client.ts';
import { defineJob, defineJobKind } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';

/**
 * One agent turn of a session, run by the agent runtime (which adds the handler with `handledBy`).
 * Serialized per session: turns of one session never overlap. Every added message sends one; a
 * run that finds no queued message has nothing to do.
 */
export const sessionTurnJob = defineJobKind({
  name: 'sessions.turn',
  payload: z.object({ sessionId: z.string().min(1) }),
  retryLimit: 2,
  retryDelaySeconds: 5,
  expireInSeconds: 3 * 3600,
  heartbeatSeconds: 30,
  concurrency: 8,
  serializeBy: (p) => p.sessionId,
});

export const SESSION_PURGE_JOB = 'sessions.purge';
/** Hourly: deleted sessions go for good soon after their retention ends. */
export const SESSION_PURGE_CRON = '7 * * * *';

/**
 * Removes sessions whose retention after a soft delete has passed, with their messages and
 * checkpoints (cascade). Returns how many sessions were purged.
 */
export async function purgeExpiredSessions(deps: { db: Db; clock: Clock }): Promise<number> {
  const { count } = await deps.db.session.deleteMany({ where: { purgeAfter: { lte: deps.clock.now() } } });
  return count;
}

export function sessionPurgeJob(deps: { db: Db; clock: Clock }) {
  return defineJob({
    name: SESSION_PURGE_JOB,
    payload: z.object({}),
    retryLimit: 3,
    retryDelaySeconds: 60,
    expireInSeconds: 3600,
    handler: async (_payload, ctx) => {
      const purged = await purgeExpiredSessions(deps);
      ctx.log.info({ purged }, 'purged deleted sessions past their retention');
    },
  });
}

/** Registers the hourly purge schedule (an upsert: every replica may call it). */
export async function scheduleSessionPurge(queue: JobQueue): Promise<void> {
  await queue.boss.schedule(SESSION_PURGE_JOB, SESSION_PURGE_CRON, {}, { tz: 'UTC' });
}
