import type { Principal } from '../../auth/principal.ts';
import type { PrismaClient } from '../../db/client.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import { Conflict, NotFound } from '../../lib/errors.ts';
import { ownerOf } from '../computers/access.ts';
import { approvableSession } from './access.ts';
import { settleApproval } from './approvals.ts';
import { recordSessionChange } from './session-audit.ts';
import { sessionTurnJob } from './job-kinds.ts';

export interface DecisionInput {
  decision: 'approve' | 'deny';
  scope: 'once' | 'session';
}

/**
 * `POST /sessions/{id}/approvals/{toolUseId}`: approves or denies a tool call a paused turn waits
 * on (and, with scope `session`, every later call like it). The last pending decision sends the
 * turn job that resumes the turn, on whichever worker takes it. Audited.
 */
export async function decideApproval(
  deps: { db: PrismaClient; clock: Clock; queue: Pick<JobQueue, 'send'> },
  principal: Principal,
  sessionId: string,
  toolUseId: string,
  input: DecisionInput,
) {
  const session = await approvableSession(deps.db, principal, sessionId);
  const now = deps.clock.now();
  const owner = ownerOf(principal);
  const status = input.decision === 'approve' ? ('approved' as const) : ('denied' as const);
  return deps.db.$transaction(async (tx) => {
    const key = { sessionId: session.id, toolUseId };
    const row = await tx.sessionApproval.findUnique({ where: { sessionId_toolUseId: key } });
    if (!row) throw new NotFound(`Session ${sessionId} has no approval request for tool call ${toolUseId}; GET the session for its pendingApprovals`);
    const settled = await settleApproval(tx, key, { status, scope: input.scope, decidedBy: `${owner.kind}:${owner.id}`, now }, () =>
      deps.queue.send(sessionTurnJob, { sessionId: session.id }, { tx }),
    );
    if (!settled) {
      const state = row.status === 'pending' ? 'expired' : row.status;
      throw new Conflict(`Tool call ${toolUseId} is already ${state}; only a pending approval can be decided`, {
        metadata: { toolUseId, status: state },
      });
    }
    await recordSessionChange(tx, principal, session.id, { action: `tool_call_${status}`, toolUseId, toolName: row.toolName, scope: input.scope }, now);
    const current = await tx.session.findUniqueOrThrow({ where: { id: session.id }, select: { status: true } });
    return {
      toolUseId,
      toolName: settled.toolName,
      status,
      scope: input.scope,
      decidedAt: now.getTime(),
      sessionStatus: current.status,
    };
  });
}
