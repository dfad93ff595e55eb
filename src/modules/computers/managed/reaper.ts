import type { PrismaClient } from '../../../db/client.ts';
import type { JobContext } from '../../../jobs/job.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { BYOM } from '../machines.ts';
import { computerEvents } from '../computer-events.ts';
import { STEP } from '../steps/names.ts';
import { skipPendingSteps } from '../steps/store.ts';
import { computerStackJob, sendProvision } from './job-kinds.ts';
import { deadline, POWER_TIMEOUT_MS, type Operation } from './settings.ts';
import { NOT_POOL } from '../pool/pools.ts';

/**
 * Ends every operation whose deadline passed in a real state, re-checking each computer under a
 * row lock first (another replica's reaper, or the job itself finishing, may have got there):
 * provisioning ends in `error`, a pause or resume is dropped with its reason, and a teardown is
 * queued again, because a deleted computer's resources are never forgotten. Then idle computers
 * are paused.
 */
export async function reapComputers(deps: ComputerJobDeps, ctx: Pick<JobContext, 'send' | 'log'>): Promise<void> {
  const now = deps.clock.now();
  const hung = await deps.db.computer.findMany({
    where: { operation: { not: null }, operationDeadline: { lt: now } },
    select: { id: true },
  });
  for (const { id } of hung) await reapOne(deps, ctx, id, now);
  await queueUnstartedProvisioning(deps, ctx, now);
  await pauseIdleComputers(deps, ctx, now);
}

// A bulk creation queues provisioning right after storing its computers; older than this and
// still not started, the queueing was lost (a crash in between).
const UNSTARTED_MS = 60_000;

/** Queues the provisioning of computers whose first step never started (the job id makes it a no-op otherwise). */
async function queueUnstartedProvisioning(deps: ComputerJobDeps, ctx: Pick<JobContext, 'send' | 'log'>, now: Date) {
  const unstarted = await deps.db.computer.findMany({
    where: {
      operation: 'provision',
      createdAt: { lt: new Date(now.getTime() - UNSTARTED_MS) },
      provisioningSteps: { some: { id: STEP.infrastructure, status: 'pending' } },
    },
    select: { id: true },
  });
  for (const { id } of unstarted) await sendProvision(ctx, id);
}

async function reapOne(deps: ComputerJobDeps, ctx: Pick<JobContext, 'send' | 'log'>, id: string, now: Date): Promise<void> {
  await deps.db.$transaction(async (tx) => {
    const [row] = await tx.$queryRaw<{ operation: Operation | null; operation_deadline: Date | null }[]>`
      SELECT operation, operation_deadline FROM computers WHERE id = ${id} FOR UPDATE SKIP LOCKED`;
    if (!row?.operation || !row.operation_deadline || row.operation_deadline >= now) return;
    const late = `${row.operation} did not finish by ${row.operation_deadline.toISOString()}`;
    ctx.log.warn({ computerId: id, operation: row.operation }, 'reaping a hung computer operation');
    if (row.operation === 'provision') {
      const failed = await tx.provisioningStep.updateManyAndReturn({ where: { computerId: id, status: 'running' }, data: { status: 'failed', error: `timed out: ${late}`, completedAt: now } });
      await computerEvents.steps(tx, failed);
      await skipPendingSteps(tx, id, 'provisioning timed out');
      await tx.computer.update({ where: { id }, data: { status: 'error', operation: null, operationDeadline: null, operationError: late } });
      await computerEvents.status(tx, id, 'error', { error: late });
    } else if (row.operation === 'teardown') {
      await tx.computer.update({ where: { id }, data: { operationDeadline: deadline(now, deps.managed.provisionTimeoutMs) } });
      await ctx.send(computerStackJob, { computerId: id, operation: 'teardown' }, { tx });
    } else {
      await tx.computer.update({ where: { id }, data: { operation: null, operationDeadline: null, operationError: late } });
    }
  });
}

/**
 * Pauses running managed computers unused for the idle time: no API use (`lastActiveAt`), no
 * session turn pending, running or updated, and no dependency install under way since then.
 */
async function pauseIdleComputers(deps: ComputerJobDeps, ctx: Pick<JobContext, 'send' | 'log'>, now: Date): Promise<void> {
  if (deps.managed.idlePauseMs <= 0) return;
  const cutoff = new Date(now.getTime() - deps.managed.idlePauseMs);
  const candidates = await deps.db.computer.findMany({
    where: {
      deletedAt: null,
      status: 'active',
      powerState: 'running',
      operation: null,
      providerType: { not: BYOM },
      // A warm pool's computers stay running: resuming one on claim would take a `pulumi up`.
      ...NOT_POOL,
      OR: [{ lastActiveAt: { lt: cutoff } }, { lastActiveAt: null, createdAt: { lt: cutoff } }],
    },
    select: { id: true },
  });
  if (candidates.length === 0) return;
  // The candidates' recent sessions and installs in two queries, not two per candidate.
  const computerId = { in: candidates.map((c) => c.id) };
  const sessions = await deps.db.session.findMany({
    where: { computerId, deletedAt: null, OR: [{ status: { in: ['pending', 'running'] } }, { updatedAt: { gte: cutoff } }] },
    select: { computerId: true },
    distinct: ['computerId'],
  });
  const installs = await deps.db.installRun.findMany({
    where: { computerId, OR: [{ status: { in: ['queued', 'running'] } }, { completedAt: { gte: cutoff } }] },
    select: { computerId: true },
    distinct: ['computerId'],
  });
  const busy = new Set([...sessions, ...installs].map((r) => r.computerId));
  for (const { id } of candidates) {
    if (busy.has(id)) continue;
    if (await requestPause(deps.db, ctx, id, now)) ctx.log.info({ computerId: id }, 'pausing an idle computer');
  }
}

/**
 * Pauses a running computer that has no operation under way: the `pause` operation and its stack
 * job, in one transaction (compare-and-set, so a computer still provisioning, already paused,
 * busy with another operation or deleted is left alone). Answers whether the pause was queued.
 * Whether to pause is the caller's policy (the idle reaper's above).
 */
export async function requestPause(db: PrismaClient, queue: Pick<JobContext, 'send'>, computerId: string, now: Date): Promise<boolean> {
  return db.$transaction(async (tx) => {
    const { count } = await tx.computer.updateMany({
      where: { id: computerId, operation: null, powerState: 'running', deletedAt: null },
      data: { operation: 'pause', operationDeadline: deadline(now, POWER_TIMEOUT_MS), operationError: null },
    });
    if (count === 1) await queue.send(computerStackJob, { computerId, operation: 'pause' }, { tx });
    return count === 1;
  });
}
