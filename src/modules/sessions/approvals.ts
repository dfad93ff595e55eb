import type { Db, Prisma } from '../../db/client.ts';
import type { SessionApproval } from '../../generated/prisma/client.ts';
import type { JobKind } from '../../jobs/job.ts';
import type { SendOptions } from '../../jobs/queue.ts';
import { approvalKey, defaultTools, runsWithoutApproval, type AutonomyLevel, type ContentBlock, type GateDecision, type GatedCall } from '../../agent/index.ts';
import { publish } from '../events/publish.ts';
import { sessionApprovalExpireJob } from './job-kinds.ts';
import type { PendingApprovalView } from './schemas.ts';
import { sessionEvents } from './session-events.ts';
import { appendMessage, endTurn } from './store.ts';

/**
 * Approvals: a turn whose tool calls need more autonomy than the session has pauses (status
 * pending, `turnPausedAt` set) with one `session_approvals` row per call, and its job ends. A
 * decision or an expiry that leaves none pending sends the turn job again, which resumes the turn
 * from the stored history (its last assistant message's calls, decided here). An interrupt
 * cancels the paused turn. docs/api-decisions.md, "Approvals (#34)".
 */

type Send = <P, I>(kind: JobKind<P, I>, payload: I, opts?: SendOptions) => Promise<string>;

/** What the model is told of a call it may not make. */
export const APPROVAL_RESULTS = {
  denied: (tool: string) => `The user denied this ${tool} call; it was not run. Do not try it again another way; ask the user how to proceed.`,
  expired: (tool: string, timeoutMs: number) =>
    `Nobody answered the approval request for this ${tool} call within ${duration(timeoutMs)}; it was not run. Tell the user what you wanted to do and why, so they can run it themselves or ask you to try again.`,
  cancelled: (tool: string) => `The user interrupted the turn while it waited for approval; this ${tool} call was not run.`,
};

function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 120) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.round(seconds / 60);
  return `${minutes} minutes`;
}

function pendingApprovalView(row: SessionApproval): PendingApprovalView {
  return {
    toolUseId: row.toolUseId,
    toolName: row.toolName,
    input: (row.input ?? {}) as Record<string, unknown>,
    requestedAt: row.requestedAt.getTime(),
    expiresAt: row.expiresAt.getTime(),
  };
}

/** The pending approvals of each session, oldest first. */
export async function pendingApprovals(db: Db, sessionIds: string[]): Promise<Map<string, PendingApprovalView[]>> {
  const out = new Map<string, PendingApprovalView[]>(sessionIds.map((id) => [id, []]));
  if (sessionIds.length === 0) return out;
  const rows = await db.sessionApproval.findMany({
    where: { sessionId: { in: sessionIds }, status: 'pending' },
    orderBy: [{ requestedAt: 'asc' }, { position: 'asc' }],
  });
  for (const row of rows) out.get(row.sessionId)!.push(pendingApprovalView(row));
  return out;
}

/**
 * The gate of a session's turn: a call decided before (the turn paused for it) gets its decision;
 * a call like one approved or denied for the rest of the session (approvalKey) gets that; any
 * other call is asked about.
 */
export function sessionGate(db: Db, sessionId: string, timeoutMs: number) {
  return async (calls: readonly GatedCall[]): Promise<ReadonlyMap<string, GateDecision>> => {
    const rows = await db.sessionApproval.findMany({
      where: { sessionId, OR: [{ toolUseId: { in: calls.map((c) => c.toolUse.id) } }, { scope: 'session', status: { in: ['approved', 'denied'] } }] },
      orderBy: { decidedAt: 'asc' },
    });
    const byId = new Map(rows.map((r) => [r.toolUseId, r]));
    // The latest session-scope decision for a kind of call wins.
    const standing = new Map(rows.filter((r) => r.scope === 'session').map((r) => [r.likeKey, r.status]));
    return new Map(
      calls.map(({ toolUse, tool }): [string, GateDecision] => {
        const own = byId.get(toolUse.id);
        const status = own && own.status !== 'pending' ? own.status : standing.get(approvalKey(tool.name, toolUse.input));
        if (status === 'approved') return [toolUse.id, { run: true }];
        if (status === 'denied') return [toolUse.id, { refuse: APPROVAL_RESULTS.denied(tool.name) }];
        if (status === 'expired') return [toolUse.id, { refuse: APPROVAL_RESULTS.expired(tool.name, timeoutMs) }];
        if (status === 'cancelled') return [toolUse.id, { refuse: APPROVAL_RESULTS.cancelled(tool.name) }];
        return [toolUse.id, { ask: true }];
      }),
    );
  };
}

/**
 * Pauses a running turn for `calls`: the approvals stored, the session pending, the request
 * published (session and organization streams, webhooks) and each approval's expiry queued, in
 * one transaction. False when the session was no longer running (deleted meanwhile).
 */
export async function pauseTurn(tx: Db, sessionId: string, calls: readonly GatedCall[], opts: { now: Date; timeoutMs: number; send: Send }): Promise<boolean> {
  const { now } = opts;
  const { count } = await tx.session.updateMany({
    where: { id: sessionId, status: 'running', deletedAt: null },
    data: { status: 'pending', turnPausedAt: now, turnHeartbeatAt: null, updatedAt: now },
  });
  if (count === 0) return false;
  const expiresAt = new Date(now.getTime() + opts.timeoutMs);
  const rows = calls.map(({ toolUse, tool }, position) => ({
    sessionId,
    toolUseId: toolUse.id,
    toolName: tool.name,
    position,
    input: toolUse.input as Prisma.InputJsonValue,
    likeKey: approvalKey(tool.name, toolUse.input),
    requestedAt: now,
    expiresAt,
  }));
  // A call asked about before (a resumed turn's other call) keeps its row.
  await tx.sessionApproval.createMany({ data: rows, skipDuplicates: true });
  const pending = (await pendingApprovals(tx, [sessionId])).get(sessionId)!;
  await sessionEvents.status(tx, sessionId, 'pending');
  await publish(tx, { type: 'session.approval_requested', sessionId, data: { sessionId, status: 'pending', pendingApprovals: pending } });
  for (const row of rows) {
    await opts.send(sessionApprovalExpireJob, { sessionId, toolUseId: row.toolUseId }, { tx, startAfter: expiresAt });
  }
  return true;
}

/**
 * Settles one pending approval (approve, deny, expire) by compare-and-set, under the session's row
 * lock; sends the turn job to resume when it was the last one pending. Null when the approval was
 * no longer pending. Call it in a transaction.
 */
export async function settleApproval(
  tx: Db,
  key: { sessionId: string; toolUseId: string },
  change: { status: 'approved' | 'denied' | 'expired'; scope?: 'once' | 'session'; decidedBy?: string; now: Date; by?: 'autonomy_change' },
  resume: () => Promise<unknown>,
): Promise<SessionApproval | null> {
  // Decisions of one session take turns: two answered at once must not each see the other still
  // pending, or neither would send the resume.
  await tx.$queryRaw`SELECT id FROM sessions WHERE id = ${key.sessionId} FOR UPDATE`;
  const { count } = await tx.sessionApproval.updateMany({
    where: { ...key, status: 'pending', ...(change.status === 'expired' ? { expiresAt: { lte: change.now } } : { expiresAt: { gt: change.now } }) },
    data: { status: change.status, scope: change.scope ?? null, decidedBy: change.decidedBy ?? null, decidedAt: change.now },
  });
  if (count === 0) return null;
  const row = await tx.sessionApproval.findUniqueOrThrow({ where: { sessionId_toolUseId: key } });
  await publish(tx, {
    type: 'session.approval_resolved',
    sessionId: key.sessionId,
    data: { toolUseId: key.toolUseId, status: row.status, ...(row.scope ? { scope: row.scope } : {}), ...(change.by ? { by: change.by } : {}) },
  });
  const left = await tx.sessionApproval.count({ where: { sessionId: key.sessionId, status: 'pending' } });
  if (left === 0) await resume();
  return row;
}

/**
 * A session's autonomy was raised while its turn waited: each pending call the new level runs
 * without asking is approved (once, by whoever raised it), and the turn resumes when none is left
 * pending; the others keep waiting. Returns the calls it approved. Call it in a transaction.
 */
export async function approveAllowedCalls(
  tx: Db,
  sessionId: string,
  level: AutonomyLevel,
  opts: { decidedBy: string; now: Date; resume: () => Promise<unknown> },
): Promise<SessionApproval[]> {
  const kinds = new Map(defaultTools.map((t) => [t.name, t.kind]));
  const pending = await tx.sessionApproval.findMany({ where: { sessionId, status: 'pending' }, orderBy: { position: 'asc' } });
  const approved: SessionApproval[] = [];
  for (const row of pending) {
    const kind = kinds.get(row.toolName);
    if (!kind || !runsWithoutApproval(level, kind)) continue;
    const change = { status: 'approved' as const, decidedBy: opts.decidedBy, now: opts.now, by: 'autonomy_change' as const };
    const settled = await settleApproval(tx, { sessionId, toolUseId: row.toolUseId }, change, opts.resume);
    if (settled) approved.push(settled);
  }
  return approved;
}

/**
 * Called when the resume job runs: true when the paused turn can go on (no approval pending),
 * which marks the session running again.
 */
export async function resumeTurn(tx: Db, sessionId: string, now: Date): Promise<boolean> {
  if ((await tx.sessionApproval.count({ where: { sessionId, status: 'pending' } })) > 0) return false;
  const { count } = await tx.session.updateMany({
    where: { id: sessionId, status: 'pending', turnPausedAt: { not: null }, deletedAt: null },
    data: { status: 'running', turnPausedAt: null, turnHeartbeatAt: now, updatedAt: now },
  });
  if (count === 0) return false;
  await sessionEvents.status(tx, sessionId, 'running');
  return true;
}

/**
 * Ends a paused turn because it was interrupted: its approvals cancelled, every unanswered call of
 * its last assistant message answered (none of them ran), the turn ended as interrupted. Returns
 * the status it ends in (pending when messages wait), or null when the turn was not paused.
 */
export async function cancelPausedTurn(tx: Db, sessionId: string, now: Date): Promise<'idle' | 'pending' | null> {
  const { count } = await tx.session.updateMany({
    where: { id: sessionId, status: 'pending', turnPausedAt: { not: null } },
    data: { status: 'running', turnPausedAt: null },
  });
  if (count === 0) return null;
  await tx.sessionApproval.updateMany({ where: { sessionId, status: 'pending' }, data: { status: 'cancelled', decidedAt: now } });
  const last = await tx.sessionMessage.findFirst({
    where: { sessionId, role: { in: ['assistant', 'tool'] } },
    orderBy: { seq: 'desc' },
  });
  const calls = last?.role === 'assistant' ? (last.content as ContentBlock[]).filter((b) => b.type === 'tool_use') : [];
  if (calls.length > 0) {
    await appendMessage(
      tx,
      sessionId,
      {
        role: 'tool',
        content: calls.map((c) => ({ type: 'tool_result' as const, toolUseId: c.id, content: APPROVAL_RESULTS.cancelled(c.name), isError: true })),
      },
      now,
    );
  }
  await endTurn(tx, sessionId, now, { outcome: 'interrupted' });
  const { status } = await tx.session.findUniqueOrThrow({ where: { id: sessionId }, select: { status: true } });
  return status === 'pending' ? 'pending' : 'idle';
}
