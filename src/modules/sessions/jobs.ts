import { z } from 'zod';
import type { Db, PrismaClient } from '../../db/client.ts';
import { defineJobKind, type JobDefinition, type JobSchedule } from '../../jobs/job.ts';
import type { Clock } from '../../lib/clock.ts';
import { expireApproval, expireOverdueApprovals } from './approval-expire.ts';
import { sessionApprovalExpireJob, sessionTurnJob } from './job-kinds.ts';
import { reapStuckTurns } from './reaper.ts';
import { runSessionTurn, type TurnRunnerDeps } from './turn-runner.ts';

/** Removes deleted sessions past their retention. */
const sessionPurgeJob = defineJobKind({
  name: 'sessions.purge',
  payload: z.object({}),
  retryLimit: 3,
  retryDelaySeconds: 60,
  expireInSeconds: 3600,
});

/** Ends or re-sends agent turns whose worker stopped. */
const sessionReapJob = defineJobKind({
  name: 'sessions.reap',
  payload: z.object({}),
  retryLimit: 0,
  expireInSeconds: 300,
});

export const sessionSchedules: JobSchedule[] = [
  // Hourly: deleted sessions go for good soon after their retention ends.
  { kind: sessionPurgeJob, cron: '7 * * * *', payload: {} },
  { kind: sessionReapJob, cron: '* * * * *', payload: {} },
];

/**
 * Removes sessions whose retention after a soft delete has passed, with their messages and
 * checkpoints (cascade). Returns how many sessions were purged.
 */
export async function purgeExpiredSessions(deps: { db: Db; clock: Clock }): Promise<number> {
  const { count } = await deps.db.session.deleteMany({ where: { purgeAfter: { lte: deps.clock.now() } } });
  return count;
}

export function sessionJobs(deps: TurnRunnerDeps & { db: PrismaClient; turnConcurrency?: number }): JobDefinition[] {
  return [
    sessionTurnJob.handledBy((p, ctx) => runSessionTurn(deps, p, ctx), { concurrency: deps.turnConcurrency }),
    sessionApprovalExpireJob.handledBy((p, ctx) => expireApproval(deps, p, ctx.send)),
    sessionPurgeJob.handledBy(async (_payload, ctx) => {
      const purged = await purgeExpiredSessions(deps);
      ctx.log.info({ purged }, 'purged deleted sessions past their retention');
    }),
    sessionReapJob.handledBy(async (_payload, ctx) => {
      const reaped = await reapStuckTurns(deps, (sessionId) => ctx.send(sessionTurnJob, { sessionId }));
      if (reaped.ended + reaped.resent > 0) ctx.log.warn(reaped, 'reaped agent turns whose worker stopped');
      const expired = await expireOverdueApprovals(deps, ctx.send);
      if (expired > 0) ctx.log.warn({ expired }, 'expired approvals whose expiry job was lost');
    }),
  ];
}
