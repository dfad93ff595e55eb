import type { Principal } from '../../auth/principal.ts';
import type { PageQuery } from '../../http/pagination.ts';
import { NotFound } from '../../lib/errors.ts';
import { applyConfig, planConfig } from './apply.ts';
import type { ConfigDeps } from './deps.ts';
import { exportConfig } from './export.ts';
import { listManaged } from './managed.ts';
import { listRevisions, revisionView } from './revisions.ts';
import type { PlanBody } from './schemas.ts';
import { receivePush } from './push.ts';
import { secretOperations } from './secrets.ts';
import { sourceOperations } from './sources.ts';

/** Requests' plans and applies manage what they create as "api" (sources manage theirs by their id). */
const API_SOURCE = 'api';

/** Platform as code: documents planned and applied through the modules' own operations. */
export function createConfigService(deps: ConfigDeps) {
  return {
    async plan(principal: Principal, body: PlanBody) {
      return (await planConfig(deps, deps.db, principal, { files: body.files, prune: body.prune ?? false, managedBy: API_SOURCE })).plan;
    },
    apply: (principal: Principal, body: PlanBody) => applyConfig(deps, principal, { files: body.files, prune: body.prune ?? false, managedBy: API_SOURCE }),
    revisions: (principal: Principal, page: PageQuery) => listRevisions(deps, principal, page),
    async revision(principal: Principal, revisionId: string) {
      const row = await deps.db.configRevision.findFirst({ where: { id: revisionId, organizationId: principal.organizationId } });
      if (!row) throw new NotFound(`Config revision ${revisionId} not found`);
      return revisionView(row);
    },
    export: (principal: Principal) => exportConfig(deps.db, principal),
    managed: (principal: Principal) => listManaged(deps.db, principal),
    secrets: secretOperations(deps),
    sources: sourceOperations(deps),
    push: (sourceId: string, header: (name: string) => string | undefined, body: Buffer) => receivePush(deps, sourceId, header, body),
  };
}
export type ConfigService = ReturnType<typeof createConfigService>;
