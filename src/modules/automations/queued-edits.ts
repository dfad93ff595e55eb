import type { Principal } from '../../auth/principal.ts';
import type { Prisma } from '../../db/client.ts';
import { AppError } from '../../lib/errors.ts';
import type { AutomationsDeps } from './deps.ts';
import { editAutomation } from './edit.ts';
import type { EditBody } from './schemas.ts';

/**
 * Runs an automation's queued edits (declare.ts) one by one, oldest first, each recorded on its
 * own CI job. An edit the organization cannot make (no forge connection) fails on its job and the
 * next one runs; anything else fails the run, to be retried from the edit it stopped at.
 */
export async function runQueuedEdits(deps: Omit<AutomationsDeps, 'wiki'>, automationId: string): Promise<void> {
  for (;;) {
    const job = await deps.db.ciJob.findFirst({ where: { automationId, status: 'queued' }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    if (!job) return;
    const { request } = job.detail as unknown as { request: EditBody };
    try {
      await editAutomation(deps, job.requestedBy as unknown as Principal, request, job.id);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const repos = request.repos.map((r) => ({ ...r, error: err.message }));
      await deps.db.ciJob.update({ where: { id: job.id }, data: { status: 'failed', repos: repos as Prisma.InputJsonValue, finishedAt: deps.clock.now() } });
    }
  }
}
