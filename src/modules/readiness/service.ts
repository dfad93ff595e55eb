import { z } from 'zod';
import type { Principal } from '../../auth/principal.ts';
import type { PrismaClient } from '../../db/client.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { Clock } from '../../lib/clock.ts';
import { BadRequest, NotFound } from '../../lib/errors.ts';
import { newUuid } from '../../lib/ids.ts';
import { CRITERIA } from './catalogue.ts';
import type { ResolveComputerTarget } from '../../repos/computer-target.ts';
import { enqueueEvaluation } from './jobs.ts';
import { maturityLevel } from './levels.ts';
import { repoKey } from '../../repos/policy.ts';
import type { EvaluateBody, Evaluation, ListQuery, Report, ReportInput } from './schemas.ts';
import { toEvaluation, toReport } from './views.ts';

export interface ReadinessServiceDeps {
  db: PrismaClient;
  clock: Clock;
  /** Sends evaluation jobs; without it evaluation requests answer 503. */
  queue: Pick<JobQueue, 'send'>;
  /** Supplied by the computers module: 404/403 for computers the caller cannot reach. */
  resolveComputerTarget: ResolveComputerTarget;
  /** Evaluations without a computer clone from the control plane's network: their URL must pass it. */
  egress: Pick<EgressGuard, 'screen'>;
}

export function createReadinessService(deps: ReadinessServiceDeps) {
  const { db, clock } = deps;

  return {
    /** Newest first; `startAfter` names the last report of the previous page. */
    async list(principal: Principal, q: ListQuery): Promise<{ reports: Report[] }> {
      const organizationId = principal.organizationId;
      let after: { id: string; createdAt: Date } | null = null;
      if (q.startAfter) {
        after = await db.readinessReport.findFirst({ where: { id: q.startAfter, organizationId }, select: { id: true, createdAt: true } });
        if (!after) {
          throw new BadRequest(`startAfter ${q.startAfter} is not a report of this organization; pass the reportId of the last report of the previous page`);
        }
      }
      const rows = await db.readinessReport.findMany({
        where: {
          organizationId,
          ...(q.repoId ? { repoKey: repoKey(q.repoId)! } : {}),
          ...(after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {}),
        },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        take: q.limit,
      });
      return { reports: rows.map(toReport) };
    },

    /** Stores a report evaluated elsewhere. */
    async ingest(principal: Principal, input: ReportInput): Promise<Report> {
      const row = await db.readinessReport.create({
        data: {
          id: newUuid(),
          organizationId: principal.organizationId,
          repoUrl: input.repoUrl.trim(),
          repoKey: repoKey(input.repoUrl)!,
          apps: input.apps,
          report: input.report,
          commitHash: input.commitHash ?? null,
          branch: input.branch ?? null,
          hasLocalChanges: input.hasLocalChanges ?? null,
          hasNonRemoteCommits: input.hasNonRemoteCommits ?? null,
          ...(input.modelUsed ? { modelUsed: input.modelUsed } : {}),
          agentVersion: input.agentVersion ?? null,
          createdAt: clock.now(),
        },
      });
      return toReport(row);
    },

    /** Records the request and enqueues the evaluation job in one transaction. */
    async evaluate(principal: Principal, body: EvaluateBody): Promise<Evaluation> {
      if (body.computerId !== undefined) await deps.resolveComputerTarget(principal, body.computerId);
      else await deps.egress.screen(body.repoUrl);
      const queue = deps.queue;
      const id = newUuid();
      const row = await db.$transaction(async (tx) => {
        const created = await tx.readinessEvaluation.create({
          data: {
            id,
            organizationId: principal.organizationId,
            requestedBy: principal,
            repoUrl: body.repoUrl.trim(),
            branch: body.branch ?? null,
            computerId: body.computerId ?? null,
            status: 'queued',
            createdAt: clock.now(),
          },
        });
        await enqueueEvaluation(queue, id, tx);
        return created;
      });
      return toEvaluation(row, null);
    },

    async evaluation(principal: Principal, evaluationId: string): Promise<Evaluation> {
      const row = z.uuid().safeParse(evaluationId).success
        ? await db.readinessEvaluation.findFirst({ where: { id: evaluationId, organizationId: principal.organizationId } })
        : null;
      if (!row) throw new NotFound(`No readiness evaluation ${evaluationId} in this organization; use the evaluationId that POST .../evaluate returned`);
      const report = row.reportId ? await db.readinessReport.findUnique({ where: { id: row.reportId }, select: { report: true } }) : null;
      const level = report ? maturityLevel(report.report as Record<string, { numerator: number; denominator: number }>, CRITERIA) : null;
      return toEvaluation(row, level);
    },
  };
}
export type ReadinessService = ReturnType<typeof createReadinessService>;
