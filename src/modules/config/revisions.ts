import type { Principal } from '../../auth/principal.ts';
import type { ConfigRevision } from '../../generated/prisma/client.ts';
import { pageQuery, toPage, type PageQuery } from '../../http/pagination.ts';
import type { ConfigDeps } from './deps.ts';
import type { Plan, RevisionView } from './schemas.ts';

export function revisionView(r: ConfigRevision): RevisionView {
  return {
    id: r.id,
    number: r.number,
    actor: { kind: r.actorKind === 'human' ? 'human' : 'service', id: r.actorId },
    source: r.source,
    commit: r.commit,
    plan: r.plan as unknown as Plan,
    createdAt: r.createdAt.getTime(),
  };
}

/** The organization's revisions, newest first. */
export async function listRevisions(deps: Pick<ConfigDeps, 'db'>, principal: Principal, page: PageQuery) {
  const q = pageQuery(page);
  const rows = await deps.db.configRevision.findMany({ where: { organizationId: principal.organizationId, ...q.where }, orderBy: q.orderBy, take: q.take });
  const { items, pagination } = toPage(rows, page);
  return { revisions: items.map(revisionView), pagination };
}
