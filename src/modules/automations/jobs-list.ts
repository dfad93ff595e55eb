import type { Principal } from '../../auth/principal.ts';
import { pageQuery, toPage, type PageQuery } from '../../http/pagination.ts';
import type { CiJob } from '../../generated/prisma/client.ts';
import type { AutomationsDeps } from './deps.ts';
import type { CiJobSchema } from './schemas.ts';
import type { z } from 'zod';

export function jobView(j: CiJob): z.infer<typeof CiJobSchema> {
  return {
    id: j.id,
    kind: j.kind === 'run' ? 'run' : 'edit',
    action: j.action,
    automationId: j.automationId,
    automationName: j.automationName,
    modeId: j.modeId,
    status: j.status,
    repos: j.repos as Record<string, unknown>[],
    detail: j.detail as Record<string, unknown>,
    createdAt: j.createdAt.getTime(),
    finishedAt: j.finishedAt?.getTime() ?? null,
  };
}

/** Every edit request and automation run of the organization, newest first. */
export async function listJobs(deps: AutomationsDeps, principal: Principal, page: PageQuery) {
  const q = pageQuery(page);
  const rows = await deps.db.ciJob.findMany({ ...q, where: { organizationId: principal.organizationId, ...q.where } });
  const { items, pagination } = toPage(rows, page);
  return { jobs: items.map(jobView), pagination };
}
