import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import type { ComputerTemplate } from '../../generated/prisma/client.ts';
import { liveTemplate, type TemplatesDeps } from './deps.ts';
import { templateView } from './views.ts';

/** The templates as the API shows them: with the commits of the versions they point at. */
export async function templateViews(deps: Pick<TemplatesDeps, 'publicUrl'>, db: Db, rows: ComputerTemplate[]) {
  const ids = rows.flatMap((t) => [t.currentVersionId, t.candidateVersionId]).filter((id): id is string => id !== null);
  const versions = ids.length ? await db.computerTemplateVersion.findMany({ where: { id: { in: ids } }, select: { id: true, commit: true } }) : [];
  const commits = new Map(versions.map((v) => [v.id, v.commit]));
  const publicUrl = deps.publicUrl?.();
  return rows.map((t) => templateView(t, commits, publicUrl));
}

export async function listTemplates(deps: TemplatesDeps, principal: Principal) {
  const rows = await deps.db.computerTemplate.findMany({
    where: { organizationId: principal.organizationId, deletedAt: null },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
  });
  return templateViews(deps, deps.db, rows);
}

export async function getTemplate(deps: TemplatesDeps, principal: Principal, templateId: string) {
  const [view] = await templateViews(deps, deps.db, [await liveTemplate(deps.db, principal.organizationId, templateId)]);
  return view!;
}
