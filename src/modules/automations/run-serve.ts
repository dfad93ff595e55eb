import type { Principal } from '../../auth/principal.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import { BadRequest, Conflict, NotFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { AutomationsDeps } from './deps.ts';
import { failureMessage, fromForge, orgForge } from './forge.ts';
import { jobView } from './jobs-list.ts';
import { MODES, type ModeId } from './modes.ts';
import type { RunCompleteBody, RunStartBody } from './schemas.ts';
import type { AutomationSettings } from './settings.ts';

type Json = Prisma.InputJsonValue;
/** Diffs past this are cut: the agent can read the rest from the repository. */
const MAX_DIFF = 100_000;

/** The mode's prompt with what triggered the run: the pull request and its diff, or the pushed ref. */
async function promptFor(deps: AutomationsDeps, organizationId: string, mode: ModeId, settings: AutomationSettings, body: RunStartBody) {
  const ask = mode === 'custom' ? (settings.customPrompt ?? '') : MODES[mode].prompt;
  const lines = [ask, '', `Repository: ${body.repoFullName}`, `Event: ${body.event}`];
  if (body.ref) lines.push(`Ref: ${body.ref}`);
  if (body.sha) lines.push(`Commit: ${body.sha}`);
  if (body.pullRequestNumber) {
    const forge = await orgForge(deps, organizationId);
    if (!forge) throw new BadRequest('The organization has no source-control connection to read the pull request with');
    const pr = await fromForge(forge, () => forge.client.getPullRequest(body.repoFullName, body.pullRequestNumber!));
    const diff = await fromForge(forge, () => forge.client.pullRequestDiff(body.repoFullName, body.pullRequestNumber!));
    lines.push(
      `Pull request #${pr.number}: ${pr.title} (by ${pr.author}, ${pr.headRef} into ${pr.baseRef})`,
      pr.body ? `\n${pr.body}\n` : '',
      '```diff',
      diff.length > MAX_DIFF ? `${diff.slice(0, MAX_DIFF)}\n… (diff cut at ${MAX_DIFF} characters)` : diff,
      '```',
    );
    return { prompt: lines.join('\n'), draft: pr.draft };
  }
  return { prompt: lines.join('\n'), draft: false };
}

/**
 * A run begins: a paused automation answers "paused" (and the run records it) instead of
 * failing, so CI shows why nothing ran; otherwise the job is recorded and the CLI gets the
 * computer and the prompt.
 */
export async function startRun(deps: AutomationsDeps, principal: Principal, body: RunStartBody) {
  const { db, clock } = deps;
  const organizationId = principal.organizationId;
  const automation = await db.ciAutomation.findFirst({ where: { id: body.automationId, organizationId } });
  if (!automation || automation.status === 'deleted') {
    throw new NotFound(`No CI automation ${body.automationId} in this organization; the workflow may belong to a deleted automation`);
  }
  const mode = automation.modeId as ModeId;
  const record = async (status: string, detail: Record<string, unknown>) => {
    const job = await db.ciJob.create({
      data: {
        id: newId('cijob'),
        organizationId,
        kind: 'run',
        automationId: automation.id,
        automationName: automation.name,
        modeId: mode,
        status,
        repos: [{ repoFullName: body.repoFullName, ...(body.pullRequestNumber ? { pullRequest: body.pullRequestNumber } : {}) }] as Json,
        detail: { event: body.event, ...(body.runUrl ? { runUrl: body.runUrl } : {}), ...detail } as Json,
        requestedBy: principal as unknown as Json,
        createdAt: clock.now(),
        finishedAt: status === 'running' ? null : clock.now(),
      },
    });
    return job.id;
  };
  if (automation.status === 'paused') {
    const detail = `The automation "${automation.name}" is paused: ${automation.pausedReason ?? 'its computer was deleted'}. Edit it with a computerId to resume.`;
    return { jobId: await record('paused', { reason: detail }), status: 'paused' as const, detail, modeId: mode };
  }
  if (mode === 'wiki-refresh') return refreshWiki(deps, principal, body, record);
  const computerId = body.computerId ?? automation.computerId;
  if (!computerId) {
    throw new BadRequest(`The automation "${automation.name}" has no computer: edit it with a computerId, or set register-runner: true in its yamlParams`);
  }
  const { prompt, draft } = await promptFor(deps, organizationId, mode, automation.settings as AutomationSettings, body);
  if (draft && mode === 'code-review') {
    const detail = 'The pull request is a draft; code review runs when it is marked ready';
    return { jobId: await record('skipped', { reason: detail }), status: 'skipped' as const, detail, modeId: mode };
  }
  return { jobId: await record('running', { computerId }), status: 'running' as const, modeId: mode, computerId, prompt };
}

/**
 * `wiki-refresh` (a push to the default branch): no session; the control plane generates a new
 * wiki run of the repository at the pushed branch, which reuses the pages the push left unchanged.
 * The run's job records the wiki run it created.
 */
async function refreshWiki(
  deps: AutomationsDeps,
  principal: Principal,
  body: RunStartBody,
  record: (status: string, detail: Record<string, unknown>) => Promise<string>,
) {
  const forge = await orgForge(deps, principal.organizationId);
  if (!forge) throw new BadRequest('The organization has no source-control connection to find the repository with');
  const repo = await fromForge(forge, () => forge.client.getRepository(body.repoFullName));
  const branch = body.ref?.startsWith('refs/heads/') ? body.ref.slice('refs/heads/'.length) : repo.defaultBranch;
  const run = await deps.wiki.createRun(principal, { repoUrl: repo.cloneUrl, branch });
  const detail = `wiki run ${run.wikiRunId} queued for ${repo.fullName} at ${branch}`;
  return {
    jobId: await record('succeeded', { wikiRunId: run.wikiRunId, ...(body.sha ? { sha: body.sha } : {}) }),
    status: 'wiki' as const,
    detail,
    modeId: 'wiki-refresh',
    wikiRunId: run.wikiRunId,
  };
}

/** A run ends: its result goes to the pull request as a comment through the organization's connection. */
export async function completeRun(deps: AutomationsDeps, principal: Principal, jobId: string, body: RunCompleteBody) {
  const { db, clock } = deps;
  const job = await db.ciJob.findFirst({ where: { id: jobId, organizationId: principal.organizationId, kind: 'run' } });
  if (!job) throw new NotFound(`No CI automation run ${jobId} in this organization`);
  if (job.status !== 'running') throw new Conflict(`The run ${jobId} is ${job.status} already`);
  const [target] = job.repos as { repoFullName: string; pullRequest?: number }[];
  const detail = job.detail as Record<string, unknown>;
  const outcome: Record<string, unknown> = {};
  if (target?.pullRequest && (body.result || body.error)) {
    const title = `### agentplane ${MODES[job.modeId as ModeId]?.title ?? job.modeId}`;
    const footer = [body.sessionId ? `session \`${body.sessionId}\`` : '', detail.runUrl ? `[run](${String(detail.runUrl)})` : ''].filter(Boolean).join(' · ');
    const text = `${title}\n\n${body.result ?? `The run failed: ${body.error}`}\n\n<sub>${footer}</sub>\n`;
    try {
      const forge = await orgForge(deps, principal.organizationId);
      if (!forge) throw new Error('the organization has no source-control connection');
      outcome.commentUrl = (await forge.client.commentOnPullRequest(target.repoFullName, target.pullRequest, text)).htmlUrl;
    } catch (err) {
      outcome.commentError = failureMessage(err);
    }
  }
  const status = body.conclusion === 'success' && !outcome.commentError ? 'succeeded' : 'failed';
  const { count } = await db.ciJob.updateMany({
    where: { id: job.id, status: 'running' },
    data: {
      status,
      finishedAt: clock.now(),
      repos: [{ ...target, ...outcome }] as Json,
      detail: {
        ...detail,
        conclusion: body.conclusion,
        ...(body.sessionId ? { sessionId: body.sessionId } : {}),
        ...(body.error ? { error: body.error } : {}),
      } as Json,
    },
  });
  if (count === 0) throw new Conflict(`The run ${jobId} was completed by another request`);
  return jobView(await db.ciJob.findUniqueOrThrow({ where: { id: job.id } }));
}
