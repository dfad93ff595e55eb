import type { PrismaClient } from '../../../db/client.ts';
import type { JobContext } from '../../../jobs/job.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { expireOperation } from '../expire.ts';
import { begin, transition } from '../lifecycle.ts';
import { BYOM } from '../machines.ts';
import { STEP } from '../steps/names.ts';
import { computerStackJob, sendProvision } from './job-kinds.ts';
import { NOT_POOL } from '../pool/pools.ts';

/**
 * Ends every operation whose deadline passed, as the lifecycle declares (expire.ts: provisioning
 * ends in `error`, a pause or resume is dropped with its reason, a teardown is queued again, a
 * claim's computer is destroyed). Then idle computers are paused.
 */
export async function reapComputers(deps: ComputerJobDeps, ctx: Pick<JobContext, 'send' | 'log'>): Promise<void> {
  const now = deps.clock.now();
  const hung = await deps.db.computer.findMany({
    where: { operation: { not: null }, operationDeadline: { lt: now } },
    select: { id: true },
  });
  for (const { id } of hung) {
    const operation = await expireOperation(deps, ctx, id, now);
    if (operation) ctx.log.warn({ computerId: id, operation }, 'reaped a hung computer operation');
  }
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
    // A program computer whose program cannot pause (programPausable false) is never paused.
    const from = { operation: null, powerState: 'running', deletedAt: null, OR: [{ programPausable: null }, { programPausable: true }] };
    const started = await transition(tx, computerId, { from, to: begin('pause', now) });
    if (started) await queue.send(computerStackJob, { computerId, operation: 'pause' }, { tx });
    return started;
  });
}
