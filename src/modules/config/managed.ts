import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import { redactCredentials } from '../../repos/redact.ts';
import type { ManagedView } from './schemas.ts';

/**
 * What config manages in the organization, with the source and file of each object's document,
 * so pages that show an object can say it is declared elsewhere (and changing it here is drift).
 */
export async function listManaged(db: Db, principal: Principal): Promise<{ resources: ManagedView[] }> {
  const organizationId = principal.organizationId;
  const [rows, sources] = await Promise.all([
    db.configResource.findMany({ where: { organizationId }, orderBy: [{ kind: 'asc' }, { name: 'asc' }] }),
    db.configSource.findMany({ where: { organizationId }, select: { id: true, repository: true, branch: true, path: true } }),
  ]);
  const byId = new Map(sources.map((s) => [s.id, s]));
  return {
    resources: rows.map((r) => {
      const source = byId.get(r.managedBy);
      return {
        kind: r.kind,
        key: r.name,
        name: (r.declared as { name?: string }).name ?? r.name,
        resourceId: r.resourceId,
        file: r.file,
        source: source
          ? { id: source.id, repository: redactCredentials(source.repository), branch: source.branch, path: source.path }
          : { id: r.managedBy, repository: null, branch: null, path: null },
      };
    }),
  };
}
