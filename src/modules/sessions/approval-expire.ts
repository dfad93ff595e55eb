import type { PrismaClient } from '../../db/client.ts';
import type { JobKind } from '../../jobs/job.ts';
import type { SendOptions } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import { settleApproval } from './approvals.ts';
import { sessionApprovalExpireJob, sessionTurnJob } from './job-kinds.ts';

type Send = <P, I>(kind: JobKind<P, I>, payload: I, opts?: SendOptions) => Promise<string>;

/**
 * An approval's expiry came due: still pending, it expires (the model will be told nobody
 * answered) and, when it was the last one pending, the turn resumes. Answered meanwhile: nothing
 * to do. Run early (its time moved): sent again for its time.
 */
export async function expireApproval(deps: { db: PrismaClient; clock: Clock }, key: { sessionId: string; toolUseId: string }, send: Send): Promise<void> {
  const now = deps.clock.now();
  await deps.db.$transaction(async (tx) => {
    const row = await tx.sessionApproval.findUnique({ where: { sessionId_toolUseId: key } });
    if (row?.status !== 'pending') return;
    if (row.expiresAt > now) {
      await send(sessionApprovalExpireJob, key, { tx, startAfter: row.expiresAt });
      return;
    }
    await settleApproval(tx, key, { status: 'expired', now }, () => send(sessionTurnJob, { sessionId: key.sessionId }, { tx }));
  });
}

/** Expires approvals whose expiry job was lost (a minute past due): the reap job's sweep. Returns how many. */
export async function expireOverdueApprovals(deps: { db: PrismaClient; clock: Clock }, send: Send): Promise<number> {
  const overdue = await deps.db.sessionApproval.findMany({
    where: { status: 'pending', expiresAt: { lt: new Date(deps.clock.now().getTime() - 60_000) } },
    select: { sessionId: true, toolUseId: true },
  });
  for (const key of overdue) await expireApproval(deps, key, send);
  return overdue.length;
}
