import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import type { ComputerTemplateVersion } from '../../generated/prisma/client.ts';
import { pageQuery, toPage, type PageQuery } from '../../http/pagination.ts';
import { NotFound } from '../../lib/errors.ts';
import { liveTemplate, type TemplatesDeps } from './deps.ts';
import { versionView, type VersionCounts } from './views.ts';

/** How many live computers run each version: warm pool members (owner `pool`) and owned ones. */
async function computersPerVersion(db: Db, versions: ComputerTemplateVersion[]): Promise<Map<string, VersionCounts>> {
  const counts = new Map(versions.map((v) => [v.id, { poolMembers: 0, owned: 0 }]));
  if (versions.length === 0) return counts;
  const groups = await db.computer.groupBy({
    by: ['templateVersionId', 'ownerKind'],
    where: { templateVersionId: { in: versions.map((v) => v.id) }, deletedAt: null },
    _count: { _all: true },
  });
  for (const g of groups) {
    const c = counts.get(g.templateVersionId!);
    if (!c) continue;
    if (g.ownerKind === 'pool') c.poolMembers += g._count._all;
    else c.owned += g._count._all;
  }
  return counts;
}

/** The commits the template has resolved, newest first, with their previews. */
export async function listVersions(deps: TemplatesDeps, principal: Principal, templateId: string, page: PageQuery) {
  const template = await liveTemplate(deps.db, principal.organizationId, templateId);
  const q = pageQuery(page);
  const rows = await deps.db.computerTemplateVersion.findMany({ ...q, where: { templateId: template.id, ...q.where } });
  const { items, pagination } = toPage(rows, page);
  const counts = await computersPerVersion(deps.db, items);
  return { versions: items.map((v) => versionView(v, template.currentVersionId, counts.get(v.id)!)), pagination };
}

export async function getVersion(deps: TemplatesDeps, principal: Principal, templateId: string, versionId: string) {
  const template = await liveTemplate(deps.db, principal.organizationId, templateId);
  const version = await deps.db.computerTemplateVersion.findFirst({ where: { id: versionId, templateId: template.id } });
  if (!version) throw new NotFound(`Version ${versionId} of computer template ${templateId} not found`);
  const counts = await computersPerVersion(deps.db, [version]);
  return versionView(version, template.currentVersionId, counts.get(version.id)!);
}
