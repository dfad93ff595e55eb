import { Prisma } from '../../../generated/prisma/client.ts';
import { controlPlaneClone } from '../../integrations/control-plane-clone.ts';
import type { JobContext } from '../../../jobs/job.ts';
import { AppError } from '../../../lib/errors.ts';
import { jobComputerTarget } from '../../../repos/computer-target.ts';
import { CloneFailed } from '../../../repos/errors.ts';
import { repositoryName } from '../../../repos/policy.ts';
import { redactCredentials } from '../../../repos/redact.ts';
import { assemblePages, type DraftPage } from '../assemble.ts';
import { reusePages, type BasePage } from '../incremental.ts';
import type { CitedSource } from '../page.ts';
import { planWiki } from '../plan.ts';
import { storePages } from '../store.ts';
import { gitRepo } from '../survey/git-repo.ts';
import { BoundExceeded, surveyRepository, type Survey } from '../survey/survey.ts';
import { writeSurveyPage } from '../write/write-pages.ts';
import type { GenerateJobDeps } from './job-deps.ts';
import { cloneLocally, cloneOnComputer, type LocalClone } from './clone.ts';
import { writeWithModel } from './model-pages.ts';

/** A failure no retry can fix: the run fails at once with this message. */
class FinalFailure extends Error {}

type Run = NonNullable<Awaited<ReturnType<GenerateJobDeps['prisma']['wikiRun']['findUnique']>>>;

async function cloneFor(deps: GenerateJobDeps, row: Run, signal: AbortSignal): Promise<LocalClone> {
  const source = { repoUrl: row.repoUrl, branch: row.branch };
  if (!row.computerId) {
    let pinned;
    try {
      pinned = await controlPlaneClone({ db: deps.prisma, secrets: deps.secrets, egress: deps.egress }, row.organizationId, row.repoUrl);
    } catch (err) {
      if (err instanceof AppError) throw new FinalFailure(err.message);
      throw err;
    }
    return cloneLocally(deps.scratchRoot, source, pinned, signal);
  }
  if (!deps.computers) throw new FinalFailure('this server cannot reach computers, so it cannot generate on one; generate without computerId');
  const resolved = await jobComputerTarget(deps.computers.resolveTarget, row.requestedBy, row.computerId);
  if ('reason' in resolved) throw new FinalFailure(resolved.reason);
  return cloneOnComputer(deps.computers.ssh, resolved.target, deps.scratchRoot, source, deps.settings.bounds, signal);
}

/** The previous succeeded run of the same repository in the organization, whose pages may be reused. */
async function basePages(deps: GenerateJobDeps, row: Run): Promise<{ id: string; pages: Map<string, BasePage> } | null> {
  const base = await deps.prisma.wikiRun.findFirst({
    // Pages are reused only from a run written the same way (the same model, or none).
    where: {
      organizationId: row.organizationId,
      repoKey: row.repoKey,
      status: 'succeeded',
      model: row.model,
      id: { not: row.id },
      createdAt: { lte: row.createdAt },
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    select: { id: true },
  });
  if (!base) return null;
  const pages = await deps.prisma.wikiPage.findMany({ where: { runId: base.id }, select: { id: true, markdown: true, sources: true, degraded: true } });
  return { id: base.id, pages: new Map(pages.map((p) => [p.id, { ...p, sources: p.sources as unknown as CitedSource[] }])) };
}

/**
 * One generation: clone (bounded), survey, plan, write every page (the survey version, then the
 * model's where one is chosen), reuse unchanged pages of the previous run, audit links, and store
 * pages, search documents and the run's figures in one transaction.
 */
export async function runGeneration(deps: GenerateJobDeps, runId: string, ctx: Pick<JobContext, 'lastAttempt' | 'signal' | 'log'>): Promise<void> {
  const { prisma, clock } = deps;
  const row = await prisma.wikiRun.findUnique({ where: { id: runId } });
  if (!row || row.status === 'succeeded' || row.status === 'failed') {
    ctx.log.info({ runId, status: row?.status ?? 'missing' }, 'wiki run already settled');
    return;
  }
  await prisma.wikiRun.updateMany({
    where: { id: runId, status: { in: ['queued', 'running'] } },
    data: { status: 'running', startedAt: row.startedAt ?? clock.now() },
  });
  try {
    const clone = await cloneFor(deps, row, ctx.signal);
    let survey: Survey;
    try {
      survey = await surveyRepository(gitRepo(clone.gitDir), deps.settings.bounds, ctx.signal);
      const branch = row.branch ?? (await gitRepo(clone.gitDir).head(ctx.signal)).branch;
      const plan = planWiki(survey);
      const input = { survey, plan, repo: { name: repositoryName(row.repoUrl), url: row.repoUrl, branch } };
      const drafts: DraftPage[] = plan.pages.map((page) => ({ ...page, ...writeSurveyPage(input, page) }));
      const base = await basePages(deps, row);
      const moduleIds = new Set(plan.modulePages.map((p) => p.id));
      const reused = base ? reusePages(drafts, moduleIds, base.pages, survey.blobs) : 0;
      const usage = row.model ? await writeWithModel(deps, row, clone.gitDir, input, drafts, ctx) : undefined;
      const now = clock.now();
      const { pages, meta } = assemblePages(drafts, now, () => 'unlink');
      await prisma.$transaction(async (tx) => {
        await tx.wikiPage.deleteMany({ where: { runId } });
        await storePages(tx, runId, pages);
        const settled = await tx.wikiRun.updateMany({
          where: { id: runId, status: 'running' },
          data: {
            status: 'succeeded',
            branch,
            commitHash: survey.headCommit,
            pageCount: pages.length,
            pagesReused: reused,
            pagesGenerated: pages.length - reused,
            baseRunId: base?.id ?? null,
            meta: { ...meta, survey: { ...survey.totals, languages: survey.languages, skipped: plan.skipped.length } },
            ...(usage ? { tokenUsage: usage as object } : {}),
            checkpoint: Prisma.DbNull,
            completedAt: now,
          },
        });
        if (settled.count !== 1) throw new Error(`wiki run ${runId} was settled by another run`);
      });
      ctx.log.info({ runId, pages: pages.length, reused }, 'wiki run succeeded');
    } finally {
      await clone.dispose().catch((err: unknown) => ctx.log.warn({ err, runId }, 'removing the scratch clone failed'));
    }
  } catch (err) {
    const final = err instanceof FinalFailure || err instanceof CloneFailed || err instanceof BoundExceeded;
    if (!final && !ctx.lastAttempt) throw err;
    const message = redactCredentials(err instanceof Error ? err.message : String(err));
    await prisma.wikiRun.updateMany({
      where: { id: runId, status: { in: ['queued', 'running'] } },
      data: { status: 'failed', error: message, completedAt: clock.now() },
    });
    ctx.log.warn({ runId, reason: message }, 'wiki run failed');
    if (!final) throw err;
  }
}
