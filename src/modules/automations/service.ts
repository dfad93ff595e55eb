import type { Principal } from '../../auth/principal.ts';
import type { PageQuery } from '../../http/pagination.ts';
import type { AutomationsDeps } from './deps.ts';
import { editAutomation } from './edit.ts';
import { listJobs } from './jobs-list.ts';
import { listOwners, listRepositories } from './repositories.ts';
import { completeRun, startRun } from './run-serve.ts';
import { listRuns } from './runs-list.ts';
import { scanRepositories } from './scan.ts';
import type { EditBody, RunCompleteBody, RunStartBody } from './schemas.ts';

/** CI automations (spec 4.7): each operation lives in its own file; this binds them to their dependencies. */
export function createAutomationsService(deps: AutomationsDeps) {
  return {
    owners: (p: Principal) => listOwners(deps, p),
    repositories: (p: Principal, owner?: string) => listRepositories(deps, p, owner),
    scan: (p: Principal, forceRefresh: boolean) => scanRepositories(deps, p, forceRefresh),
    edit: (p: Principal, body: EditBody) => editAutomation(deps, p, body),
    jobs: (p: Principal, page: PageQuery) => listJobs(deps, p, page),
    runs: (p: Principal, page: PageQuery) => listRuns(deps, p, page),
    startRun: (p: Principal, body: RunStartBody) => startRun(deps, p, body),
    completeRun: (p: Principal, jobId: string, body: RunCompleteBody) => completeRun(deps, p, jobId, body),
  };
}
export type AutomationsService = ReturnType<typeof createAutomationsService>;
