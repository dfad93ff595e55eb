import type { Principal } from '../../auth/principal.ts';
import { decodeOpaqueCursor, encodeOpaqueCursor, type PageQuery } from '../../http/pagination.ts';
import type { ForgeRun } from '../../forge/types.ts';
import { eachConcurrently } from '../../lib/concurrency.ts';
import { z } from 'zod';
import type { AutomationsDeps } from './deps.ts';
import { failureMessage, integrationOf, orgForge } from './forge.ts';
import type { CiRunSchema, RunsResponse } from './schemas.ts';

/** Runs read per repository: the newest ones, which is what a list that starts at the newest pages through. */
const RUNS_PER_REPO = 50;
const CursorSchema = z.object({ t: z.number().int(), id: z.number().int() });
type Run = z.infer<typeof CiRunSchema>;

/** Gitea names a run's workflow `file.yml@refs/heads/main`, GitHub by its path: compare file names. */
const fileName = (p: string) => p.split('@')[0]!.split('/').pop()!;

/**
 * The time a run sorts by: its creation, else its start; a run with neither has not started yet
 * (Gitea's queued runs), which makes it the newest.
 */
const key = (r: Run) => r.createdAt ?? r.startedAt ?? Number.MAX_SAFE_INTEGER;

function runView(repoFullName: string, workflowPath: string, automationId: string | null, r: ForgeRun): Run {
  const ms = (iso: string | null) => (iso ? new Date(iso).getTime() : null);
  return {
    id: r.id,
    repoFullName,
    workflowPath,
    automationId,
    name: r.name,
    status: r.status,
    conclusion: r.conclusion,
    event: r.event,
    branch: r.headBranch,
    headSha: r.headSha,
    pullRequests: r.pullRequests,
    url: r.htmlUrl,
    createdAt: ms(r.createdAt),
    updatedAt: ms(r.updatedAt),
    startedAt: ms(r.startedAt),
    completedAt: ms(r.completedAt),
  };
}

/** The forge's runs of the automations' workflow files, newest first, paged by (createdAt, id). */
export async function listRuns(deps: AutomationsDeps, principal: Principal, page: PageQuery): Promise<z.infer<typeof RunsResponse>> {
  const forge = await orgForge(deps, principal.organizationId);
  const empty = { runs: [], pagination: { hasMore: false, nextCursor: null }, failures: [], integration: integrationOf(forge) };
  if (!forge) return empty;
  const after = page.cursor ? decodeOpaqueCursor(page.cursor, CursorSchema) : undefined;
  const automations = await deps.db.ciAutomation.findMany({ where: { organizationId: principal.organizationId, status: { not: 'deleted' } } });
  const files = new Map<string, { filePath: string; automationId: string }[]>();
  for (const a of automations) {
    for (const r of a.repos as { repoFullName: string; filePath: string }[]) {
      (files.get(r.repoFullName) ?? files.set(r.repoFullName, []).get(r.repoFullName)!).push({ filePath: r.filePath, automationId: a.id });
    }
  }
  const runs: Run[] = [];
  const failures: { repoFullName: string; error: string }[] = [];
  await eachConcurrently([...files], 8, async ([repo, workflows]) => {
    try {
      for (const run of await forge.client.listRuns(repo, RUNS_PER_REPO)) {
        const match = workflows.find((w) => fileName(w.filePath) === fileName(run.path));
        if (match) runs.push(runView(repo, match.filePath, match.automationId, run));
      }
    } catch (err) {
      failures.push({ repoFullName: repo, error: failureMessage(err) });
    }
  });
  const older = (r: Run) => !after || key(r) < after.t || (key(r) === after.t && r.id < after.id);
  const sorted = runs.filter(older).sort((a, b) => key(b) - key(a) || b.id - a.id);
  const items = sorted.slice(0, page.limit);
  const hasMore = sorted.length > page.limit;
  const last = items[items.length - 1];
  return {
    runs: items,
    pagination: { hasMore, nextCursor: hasMore && last ? encodeOpaqueCursor({ t: key(last), id: last.id }) : null },
    failures: failures.sort((a, b) => a.repoFullName.localeCompare(b.repoFullName)),
    integration: integrationOf(forge),
  };
}
