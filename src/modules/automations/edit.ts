import type { Principal } from '../../auth/principal.ts';
import type { ForgeRepository } from '../../forge/types.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import { eachConcurrently } from '../../lib/concurrency.ts';
import { BadRequest } from '../../lib/errors.ts';
import { newId, newUuid, randomToken } from '../../lib/ids.ts';
import type { AutomationsDeps } from './deps.ts';
import { failureMessage, orgForge, type OrgForge } from './forge.ts';
import { MODES, type ModeId } from './modes.ts';
import type { EditBody, EditResponse } from './schemas.ts';
import { mergeSettings, type AutomationSettings } from './settings.ts';
import { automationIdIn, renderWorkflow, updateWorkflow, type WorkflowSpec } from './workflow-file.ts';
import type { z } from 'zod';
import { NOT_POOL } from '../computers/pool/pools.ts';

const PARALLEL = 8;
type RepoResult = z.infer<typeof EditResponse>['sessions'][number];
/** A repository's answer, and the plan its file was written from. */
type Outcome = RepoResult & { plan?: Plan };
type Json = Prisma.InputJsonValue;

const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40) || 'automation';

/** Where a new workflow goes: the directory the forge already runs workflows from, else .github/workflows. */
async function defaultPath(forge: OrgForge, repo: ForgeRepository, name: string): Promise<string> {
  for (const dir of forge.client.workflowDirs) {
    if (await forge.client.listDirectory(repo.fullName, dir, repo.defaultBranch)) return `${dir}/agentplane-${slug(name)}.yml`;
  }
  return `.github/workflows/agentplane-${slug(name)}.yml`;
}

interface Plan {
  automationId: string;
  name: string;
  mode: ModeId;
  settings: AutomationSettings;
}

/** One repository: a branch, one commit and a pull request. */
async function editRepository(
  forge: OrgForge,
  body: EditBody,
  target: EditBody['repos'][number],
  plan: (fileText?: string) => Promise<Plan>,
  /** Where the automation wrote its file in this repository before, if it did. */
  knownPath: string | undefined,
): Promise<Outcome> {
  const { client } = forge;
  const repo = await client.getRepository(target.repoFullName);
  const first = body.action === 'create' ? await plan() : undefined;
  const filePath = target.filePath ?? (first ? await defaultPath(forge, repo, first.name) : knownPath);
  if (!filePath) throw new Error(`the automation has no workflow in ${target.repoFullName}; pass its filePath`);
  const existing = await client.readFile(repo.fullName, filePath, repo.defaultBranch);
  if (body.action === 'create' && existing) throw new Error(`${filePath} already exists on ${repo.defaultBranch}; use action "edit" for it`);
  if (body.action !== 'create' && !existing) throw new Error(`there is no ${filePath} on ${repo.defaultBranch}`);
  const p = first ?? (await plan(existing!.content));
  const spec: WorkflowSpec = {
    automationId: p.automationId,
    name: p.name,
    mode: p.mode,
    customPrompt: p.settings.customPrompt,
    context: { defaultBranch: repo.defaultBranch, schedule: p.settings.schedule, events: p.settings.events },
    params: p.settings.params ?? {},
  };
  const content = body.action === 'delete' ? null : existing ? updateWorkflow(existing.content, spec) : renderWorkflow(spec);
  const verb = { create: 'Add', edit: 'Update', delete: 'Remove' }[body.action];
  const branch = `agentplane/${body.action}-${slug(p.name)}-${randomToken(6)}`;
  const title = `${verb} the agentplane ${MODES[p.mode].title} workflow (${p.name})`;
  await client.commitOnNewBranch(repo.fullName, { path: filePath, content, sha: existing?.sha, message: title, base: repo.defaultBranch, branch });
  const pr = await client.openPullRequest(repo.fullName, {
    title,
    head: branch,
    base: repo.defaultBranch,
    body:
      `${verb}s \`${filePath}\`, the workflow of the agentplane automation **${p.name}** (mode \`${p.mode}\`, id \`${p.automationId}\`).\n\n` +
      (content === null ? '' : 'It runs `agentplane ci run`, which needs the repository secret `AGENTPLANE_API_KEY` and the variable `AGENTPLANE_URL`.\n'),
  });
  return { repoFullName: repo.fullName, filePath, prUrl: pr.htmlUrl, message: `Opened pull request #${pr.number}`, plan: p };
}

/**
 * POST /automations/ci/edit: every repository is tried; each answers what happened to it.
 * `queuedJobId`: the edit a config apply queued (declare.ts), recorded on that job instead of a new one.
 */
export async function editAutomation(
  deps: Omit<AutomationsDeps, 'wiki'>,
  principal: Principal,
  body: EditBody,
  queuedJobId?: string,
): Promise<z.infer<typeof EditResponse>> {
  const { db, clock } = deps;
  const organizationId = principal.organizationId;
  if (body.computerId) {
    const computer = await db.computer.findFirst({ where: { id: body.computerId, organizationId, deletedAt: null, ...NOT_POOL }, select: { id: true } });
    if (!computer) throw new BadRequest(`computerId: no computer ${body.computerId} in this organization`);
  }
  const forge = await orgForge(deps, organizationId);
  if (!forge) throw new BadRequest('The organization has no source-control connection; create one at /api/v0/integrations/source-control first');
  const stored = body.factoryAutomationId ? await db.ciAutomation.findFirst({ where: { id: body.factoryAutomationId, organizationId } }) : null;
  const createdId = body.factoryAutomationId ?? newUuid();

  const plan = async (fileText?: string): Promise<Plan> => {
    const automationId = stored?.id ?? (fileText && automationIdIn(fileText)) ?? createdId;
    const record = stored ?? (automationId !== createdId ? await db.ciAutomation.findFirst({ where: { id: automationId, organizationId } }) : null);
    const fileMode = fileText ? (/AGENTPLANE_MODE:\s*["']?([a-z-]+)/.exec(fileText)?.[1] as ModeId | undefined) : undefined;
    const mode = body.modeId ?? (record?.modeId as ModeId | undefined) ?? fileMode;
    if (!mode || !(mode in MODES)) throw new Error('the workflow names no agentplane mode; pass modeId');
    const name = body.changes?.name ?? body.automationName ?? record?.name ?? `agentplane ${MODES[mode].title}`;
    return { automationId, name, mode, settings: mergeSettings((record?.settings ?? {}) as AutomationSettings, body.changes) };
  };

  const startedAt = clock.now();
  const results: Outcome[] = new Array(body.repos.length);
  await eachConcurrently(body.repos, PARALLEL, async (target, i) => {
    try {
      const known = ((stored?.repos ?? []) as { repoFullName: string; filePath: string }[]).find((r) => r.repoFullName === target.repoFullName)?.filePath;
      results[i] = await editRepository(forge, body, target, plan, known);
    } catch (err) {
      results[i] = { repoFullName: target.repoFullName, ...(target.filePath ? { filePath: target.filePath } : {}), error: failureMessage(err) };
    }
  });

  const done = results.filter((r) => r.prUrl);
  const p = done[0]?.plan;
  const automationId = p?.automationId ?? stored?.id;
  const jobId = queuedJobId ?? newId('cijob');
  // Everything read before the transaction: on PGlite a query outside it would wait for it.
  await db.$transaction(async (tx) => {
    const current = p ? (stored ?? (await tx.ciAutomation.findUnique({ where: { id: p.automationId } }))) : null;
    // An id read from a workflow file is only trusted for this organization's own automations.
    if (p && (!current || current.organizationId === organizationId)) {
      const previous = (current?.repos ?? []) as { repoFullName: string; filePath: string }[];
      const touched = new Map(done.map((r) => [r.repoFullName, r.filePath!]));
      const repos =
        body.action === 'delete'
          ? previous.filter((r) => !touched.has(r.repoFullName))
          : [...previous.filter((r) => !touched.has(r.repoFullName)), ...[...touched].map(([repoFullName, filePath]) => ({ repoFullName, filePath }))];
      const data = {
        name: p.name,
        modeId: p.mode,
        settings: p.settings as Json,
        repos: repos as Json,
        ...(body.computerId ? { computerId: body.computerId, status: 'active', pausedReason: null } : {}),
        ...(body.action === 'delete' && repos.length === 0 ? { status: 'deleted' } : {}),
      };
      await tx.ciAutomation.upsert({ where: { id: p.automationId }, create: { id: p.automationId, organizationId, ...data }, update: data });
    }
    const outcome = {
      automationId: automationId ?? null,
      automationName: p?.name ?? body.changes?.name ?? body.automationName ?? stored?.name ?? null,
      modeId: p?.mode ?? body.modeId ?? stored?.modeId ?? null,
      status: done.length === results.length ? 'succeeded' : done.length ? 'partial' : 'failed',
      repos: results.map(({ plan: _, ...r }) => r) as Json,
      finishedAt: clock.now(),
    };
    if (queuedJobId) await tx.ciJob.update({ where: { id: queuedJobId }, data: outcome });
    else {
      await tx.ciJob.create({
        data: { id: jobId, organizationId, kind: 'edit', action: body.action, requestedBy: principal as unknown as Json, createdAt: startedAt, ...outcome },
      });
    }
  });
  return { sessions: results.map(({ plan: _, ...r }) => r), ...(automationId ? { factoryAutomationId: automationId } : {}), jobId };
}
