import type { ReadinessEvaluation } from '../../generated/prisma/client.ts';
import type { JobContext } from '../../jobs/job.ts';
import type { PinnedClone } from '../../repos/pinned-clone.ts';
import { AppError } from '../../lib/errors.ts';
import { newUuid } from '../../lib/ids.ts';
import { evaluateCheckout } from './evaluator.ts';
import { cloneRepository } from '../../repos/clone.ts';
import { CloneFailed } from '../../repos/errors.ts';
import type { EvaluateJobDeps } from './jobs.ts';
import { jobComputerTarget } from '../../repos/computer-target.ts';
import { createLocalScratchWorkspace } from '../../repos/local-workspace.ts';
import { repoKey } from '../../repos/policy.ts';
import { redactCredentials } from '../../repos/redact.ts';
import { controlPlaneClone } from '../integrations/control-plane-clone.ts';
import { createSshScratchWorkspace } from '../../repos/ssh-workspace.ts';
import type { ScratchWorkspace } from '../../repos/workspace.ts';

/** A failure no retry can fix: the evaluation fails at once with this message. */
class FinalFailure extends Error {}

async function openWorkspace(deps: EvaluateJobDeps, row: ReadinessEvaluation, signal: AbortSignal): Promise<ScratchWorkspace> {
  if (!row.computerId) return createLocalScratchWorkspace(deps.scratchRoot);
  if (!deps.computers) throw new FinalFailure('this server cannot reach computers, so it cannot evaluate on one; evaluate without computerId');
  const resolved = await jobComputerTarget(deps.computers.resolveTarget, row.requestedBy, row.computerId);
  if ('reason' in resolved) throw new FinalFailure(resolved.reason);
  return createSshScratchWorkspace(deps.computers.ssh, resolved.target, { signal });
}

/** The control plane's own clone (see controlPlaneClone); a refused URL fails the evaluation at once. */
async function checkedClone(deps: EvaluateJobDeps, row: ReadinessEvaluation): Promise<PinnedClone> {
  try {
    return await controlPlaneClone({ db: deps.prisma, secrets: deps.secrets, egress: deps.egress }, row.organizationId, row.repoUrl);
  } catch (err) {
    if (err instanceof AppError) throw new FinalFailure(err.message);
    throw err;
  }
}

/**
 * Runs one evaluation: marks it running, clones and scores the repository in a scratch workspace
 * (always removed afterwards), then stores the report and marks the evaluation succeeded in one
 * transaction. Clone failures and unusable computers fail it at once; other errors are retried
 * by the queue and fail it on the last attempt.
 */
export async function runEvaluation(deps: EvaluateJobDeps, evaluationId: string, ctx: Pick<JobContext, 'lastAttempt' | 'signal' | 'log'>): Promise<void> {
  const { prisma, clock } = deps;
  const row = await prisma.readinessEvaluation.findUnique({ where: { id: evaluationId } });
  if (!row || row.status === 'succeeded' || row.status === 'failed') {
    ctx.log.info({ evaluationId, status: row?.status ?? 'missing' }, 'readiness evaluation already settled');
    return;
  }
  await prisma.readinessEvaluation.updateMany({
    where: { id: evaluationId, status: { in: ['queued', 'running'] } },
    data: { status: 'running', startedAt: row.startedAt ?? clock.now() },
  });
  try {
    const pinned = row.computerId ? undefined : await checkedClone(deps, row);
    const ws = await openWorkspace(deps, row, ctx.signal);
    let result;
    try {
      const dir = await cloneRepository(ws, { repoUrl: row.repoUrl, branch: row.branch }, ctx.signal, pinned);
      result = await evaluateCheckout(ws, dir, { signal: ctx.signal });
    } finally {
      await ws.dispose().catch((err: unknown) => ctx.log.warn({ err, evaluationId }, 'removing the scratch directory failed'));
    }
    const reportId = newUuid();
    const now = clock.now();
    await prisma.$transaction(async (tx) => {
      await tx.readinessReport.create({
        data: {
          id: reportId,
          organizationId: row.organizationId,
          repoUrl: row.repoUrl,
          repoKey: repoKey(row.repoUrl)!,
          apps: result.apps,
          report: result.report as object,
          commitHash: result.commitHash,
          branch: result.branch,
          hasLocalChanges: result.hasLocalChanges,
          hasNonRemoteCommits: result.hasNonRemoteCommits,
          createdAt: now,
        },
      });
      const settled = await tx.readinessEvaluation.updateMany({
        where: { id: evaluationId, status: 'running' },
        data: { status: 'succeeded', reportId, completedAt: now },
      });
      if (settled.count !== 1) throw new Error(`readiness evaluation ${evaluationId} was settled by another run`);
    });
    ctx.log.info({ evaluationId, reportId }, 'readiness evaluation succeeded');
  } catch (err) {
    const final = err instanceof FinalFailure || err instanceof CloneFailed;
    if (!final && !ctx.lastAttempt) throw err;
    const message = redactCredentials(err instanceof Error ? err.message : String(err));
    await prisma.readinessEvaluation.updateMany({
      where: { id: evaluationId, status: 'running' },
      data: { status: 'failed', error: message, completedAt: clock.now() },
    });
    ctx.log.warn({ evaluationId, reason: message }, 'readiness evaluation failed');
    if (!final) throw err;
  }
}
