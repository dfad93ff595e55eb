import type { Principal } from '../../auth/principal.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import { eachConcurrently } from '../../lib/concurrency.ts';
import type { AutomationsDeps } from './deps.ts';
import { eligible, failureMessage, fromForge, integrationOf, orgForge, type OrgForge } from './forge.ts';
import type { ScanResponse } from './schemas.ts';
import { scanWorkflow } from './workflow-scan.ts';
import type { z } from 'zod';

const SCAN_TTL_MS = 30 * 60 * 1000;
/** Repositories scanned at once: enough to hide the forge's latency, few enough not to flood it. */
const PARALLEL = 8;
const WORKFLOW_FILE = /\.ya?ml$/;

type Scan = z.infer<typeof ScanResponse>;
type Stored = Pick<Scan, 'workflows' | 'failures' | 'repositoriesScanned'>;

/** Reads every workflow file of every eligible repository at its default branch. */
async function scanForge(forge: OrgForge): Promise<Stored> {
  const { client } = forge;
  const repos = (await fromForge(forge, () => client.listRepositories())).filter(eligible);
  const workflows: Stored['workflows'] = [];
  const failures: Stored['failures'] = [];
  await eachConcurrently(repos, PARALLEL, async (repo) => {
    try {
      for (const dir of client.workflowDirs) {
        const entries = await client.listDirectory(repo.fullName, dir, repo.defaultBranch);
        for (const entry of entries ?? []) {
          if (entry.type !== 'file' || !WORKFLOW_FILE.test(entry.name)) continue;
          const file = await client.readFile(repo.fullName, entry.path, repo.defaultBranch);
          if (!file) continue;
          try {
            const { runsAgentplane: _, ...found } = scanWorkflow(file.content, entry.path);
            workflows.push({ repoFullName: repo.fullName, filePath: entry.path, ...found });
          } catch (err) {
            failures.push({ repoFullName: repo.fullName, filePath: entry.path, error: `not valid YAML: ${failureMessage(err).split('\n')[0]}` });
          }
        }
      }
    } catch (err) {
      failures.push({ repoFullName: repo.fullName, error: failureMessage(err) });
    }
  });
  const order = (a: { repoFullName: string; filePath?: string }, b: { repoFullName: string; filePath?: string }) =>
    a.repoFullName.localeCompare(b.repoFullName) || (a.filePath ?? '').localeCompare(b.filePath ?? '');
  return { workflows: workflows.sort(order), failures: failures.sort(order), repositoriesScanned: repos.length };
}

/**
 * The organization's workflows, from a cache kept 30 minutes per organization in the database
 * (shared by replicas); `forceRefresh` scans anew. A new connection invalidates the cache.
 */
export async function scanRepositories(deps: AutomationsDeps, principal: Principal, forceRefresh: boolean): Promise<Scan> {
  const forge = await orgForge(deps, principal.organizationId);
  const base = { cacheTtlMs: SCAN_TTL_MS, integration: integrationOf(forge) };
  if (!forge) return { workflows: [], failures: [], repositoriesScanned: 0, scannedAt: null, cached: false, ...base };
  const organizationId = principal.organizationId;
  if (!forceRefresh) {
    const hit = await deps.db.ciScanCache.findUnique({ where: { organizationId } });
    if (hit && hit.integrationId === forge.connection.id && deps.clock.now().getTime() - hit.scannedAt.getTime() < SCAN_TTL_MS) {
      return { ...(hit.result as unknown as Stored), scannedAt: hit.scannedAt.getTime(), cached: true, ...base };
    }
  }
  const result = await scanForge(forge);
  const scannedAt = deps.clock.now();
  const data = { integrationId: forge.connection.id, scannedAt, result: result as unknown as Prisma.InputJsonValue };
  await deps.db.ciScanCache.upsert({ where: { organizationId }, create: { organizationId, ...data }, update: data });
  return { ...result, scannedAt: scannedAt.getTime(), cached: false, ...base };
}
