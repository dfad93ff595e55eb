import type { PrismaClient } from '../../db/client.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { ComputerTemplate, ComputerTemplateVersion } from '../../generated/prisma/client.ts';
import type { JobContext } from '../../jobs/job.ts';
import { stableJobId } from '../../jobs/stable-id.ts';
import type { Clock } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import { ProgramProblem, type ProgramEngine, type ProgramSource } from '../../provisioning/programs/index.ts';
import { poolConvergeJob } from '../computers/pool/job-kinds.ts';
import { templateTrackJob } from './job-kinds.ts';

export interface TrackDeps {
  db: PrismaClient;
  clock: Clock;
  programs: Pick<ProgramEngine, 'resolve' | 'preview'>;
}

type Preview = Awaited<ReturnType<ProgramEngine['preview']>>;

/** The version of this commit: found, or inserted `previewing` (two runs at once make one row: unique templateId+commit). */
async function versionOf(deps: TrackDeps, t: ComputerTemplate, commit: string): Promise<ComputerTemplateVersion> {
  const where = { templateId_commit: { templateId: t.id, commit } };
  const found = await deps.db.computerTemplateVersion.findUnique({ where });
  if (found) return found;
  try {
    return await deps.db.computerTemplateVersion.create({
      data: { id: newId('tplv'), templateId: t.id, organizationId: t.organizationId, commit, status: 'previewing', createdAt: deps.clock.now() },
    });
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    return deps.db.computerTemplateVersion.findUniqueOrThrow({ where });
  }
}

/** A program the operator's rules refuse is a failed preview too: the version says why. */
async function preview(deps: TrackDeps, t: ComputerTemplate, source: ProgramSource, commit: string, signal: AbortSignal): Promise<Preview> {
  try {
    return await deps.programs.preview(t.organizationId, source, commit, signal);
  } catch (err) {
    if (err instanceof ProgramProblem) return { ok: false, error: err.message };
    throw err;
  }
}

/**
 * One tracking run of a program template: resolve its ref; a commit not seen before becomes a
 * version (`previewing`, the template's candidate), previewed against a scratch stack, and stored
 * `ready` with what it creates or `failed` with Pulumi's error. A ready version becomes current
 * and the warm pools converge to it; a failed one is never rolled out: the template keeps its
 * current version and says why (programError). A ref that does not resolve only sets programError.
 *
 * Every write is conditional on the template still naming the program it was read with, so an
 * edit made meanwhile wins (it sends a run of its own). A run killed midway leaves the version
 * `previewing`; the retry (or the next minute's run) finds it and previews it again.
 */
export async function trackTemplate(deps: TrackDeps, templateId: string, ctx: Pick<JobContext, 'signal' | 'send' | 'log' | 'lastAttempt'>): Promise<void> {
  const t = await deps.db.computerTemplate.findFirst({ where: { id: templateId, deletedAt: null } });
  if (!t?.programRepository || t.programRef === null) return;
  const unchanged = { id: t.id, deletedAt: null, programRepository: t.programRepository, programPath: t.programPath, programRef: t.programRef };
  try {
    await track(deps, t, unchanged, ctx);
  } catch (err) {
    // Retried first; after the last attempt the template says so rather than staying `resolving`, and the next minute's run tries again.
    if (ctx.lastAttempt && !ctx.signal.aborted) {
      const message = err instanceof Error ? err.message : String(err);
      await deps.db.computerTemplate.updateMany({
        where: unchanged,
        data: { programError: `the program could not be checked (tried again every minute): ${message}`, programCheckedAt: deps.clock.now() },
      });
    }
    throw err;
  }
}

type Unchanged = Pick<ComputerTemplate, 'id' | 'programRepository' | 'programPath' | 'programRef'> & { deletedAt: null };

async function track(deps: TrackDeps, t: ComputerTemplate, unchanged: Unchanged, ctx: Pick<JobContext, 'signal' | 'send' | 'log'>): Promise<void> {
  const { db, clock } = deps;
  const templateId = t.id;
  const source: ProgramSource = { repository: t.programRepository!, path: t.programPath ?? '', ref: t.programRef! };

  let commit: string;
  try {
    commit = await deps.programs.resolve(t.organizationId, source, ctx.signal);
  } catch (err) {
    if (!(err instanceof ProgramProblem)) throw err;
    await db.computerTemplate.updateMany({ where: unchanged, data: { programError: err.message, programCheckedAt: clock.now() } });
    return;
  }

  let version = await versionOf(deps, t, commit);
  if (version.status === 'previewing') {
    ctx.log.info({ templateId, commit }, 'previewing a new commit of the template program');
    await db.computerTemplate.updateMany({ where: unchanged, data: { candidateVersionId: version.id, programError: null } });
    const result = await preview(deps, t, source, commit, ctx.signal);
    await db.computerTemplateVersion.updateMany({
      where: { id: version.id, status: 'previewing' },
      data: result.ok
        ? { status: 'ready', preview: result.creates.map((o) => ({ type: o.type, name: o.name })), error: null, previewedAt: clock.now() }
        : { status: 'failed', error: result.error, previewedAt: clock.now() },
    });
    version = await db.computerTemplateVersion.findUniqueOrThrow({ where: { id: version.id } });
  }

  await db.$transaction(async (tx) => {
    const ready = version.status === 'ready';
    const { count } = await tx.computerTemplate.updateMany({
      where: unchanged,
      data: ready
        ? { currentVersionId: version.id, candidateVersionId: null, programError: null, programCheckedAt: clock.now() }
        : {
            candidateVersionId: version.id,
            programError: `commit ${commit.slice(0, 12)} is not rolled out: ${version.error ?? 'its preview failed'}`,
            programCheckedAt: clock.now(),
          },
    });
    // The pools roll to a new current version.
    if (count > 0 && ready && t.currentVersionId !== version.id) {
      ctx.log.info({ templateId, commit }, 'a new version of the template program is current');
      await ctx.send(poolConvergeJob, { organizationId: t.organizationId }, { tx });
    }
  });
}

/** A UUID per template and minute: the minute's run is sent once however many replicas send it. */
function minuteJobId(templateId: string, now: Date): string {
  return stableJobId(`${templateTrackJob.name}:${templateId}:${Math.floor(now.getTime() / 60_000)}`);
}

/** The minute's tracking runs: one per live program template (cheap: a known commit writes one row). */
export async function sendDueTracking(deps: Pick<TrackDeps, 'db' | 'clock'>, send: JobContext['send']): Promise<void> {
  const rows = await deps.db.computerTemplate.findMany({ where: { deletedAt: null, programRepository: { not: null } }, select: { id: true } });
  const now = deps.clock.now();
  for (const { id } of rows) await send(templateTrackJob, { templateId: id }, { id: minuteJobId(id, now) });
}
