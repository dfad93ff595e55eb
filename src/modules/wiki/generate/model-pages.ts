import fs from 'node:fs/promises';
import path from 'node:path';
import type { AnalyticsEvent } from '../../analytics/events.ts';
import { recordEvents } from '../../analytics/events.ts';
import { openCustomModelKeys } from '../../organization/custom-model-keys.ts';
import { enterpriseSettingsOf } from '../../organization/enterprise-settings.ts';
import { resolveModel } from '../../../agent/models.ts';
import { createModelClient, creditsFor, runTurn, type RuntimeMessage, type Usage } from '../../../agent/index.ts';
import { localToolHost } from '../../../agent/local-tool-host.ts';
import type { JobContext } from '../../../jobs/job.ts';
import type { DraftPage } from '../assemble.ts';
import { gitRepo } from '../survey/git-repo.ts';
import type { WriteInput } from '../write/context.ts';
import { writeCheckout } from './checkout.ts';
import type { GenerateJobDeps } from './job-deps.ts';
import { readOnlyTools } from './read-only-tools.ts';

/** Model calls one page may make (reading files included) before its survey version stands in. */
const MAX_STEPS_PER_PAGE = 12;
const MIN_PROSE_CHARS = 40;

export interface RunTokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheCreationTokens: number;
  cacheReadTokens: number;
  thinkingTokens: number;
  serviceCredits: number;
}

/** What a resumed run keeps: pages the model already wrote (or failed) and what they cost. */
interface Checkpoint {
  pages: Record<string, { markdown: string; degraded: string | null; cited: string[] }>;
  usage: RunTokenUsage;
}

const SYSTEM = [
  'You write the opening prose of one page of a wiki about a code repository, for an engineer new to it.',
  'The working directory is a read-only checkout of the repository: read the files the brief names (read_file, list_directory, glob, search_text) before you write.',
  'Answer with Markdown paragraphs only: no level-1 heading, no tables, no diagrams (the page already has them).',
  'Every claim cites the file it rests on as inline code, e.g. `src/server.ts` or `src/server.ts:42`. Do not claim what no file shows.',
].join('\n');

function brief(draft: DraftPage): string {
  return [`Write the opening prose of the page "${draft.title}" (${draft.path}). Its survey version, for facts and file names:`, '', draft.markdown].join('\n');
}

/** Paths of the repository the prose cites in inline code. */
function citedPaths(prose: string, blobs: Map<string, string>): string[] {
  return [...new Set([...prose.matchAll(/`([^`\s]+?)(?::\d+(?:-\d+)?)?`/g)].map((m) => m[1]!).filter((p) => blobs.has(p)))];
}

const lastText = (messages: RuntimeMessage[]) =>
  messages
    .filter((m) => m.role === 'assistant')
    .at(-1)
    ?.content.flatMap((b) => (b.type === 'text' ? [b.text] : []))
    .join('\n')
    .trim() ?? '';

function withProse(draft: DraftPage, prose: string): string {
  const [first, ...rest] = draft.markdown.split('\n');
  return [first, '', prose, '', ...rest].join('\n');
}

function degradedVersion(draft: DraftPage, reason: string): string {
  const [first, ...rest] = draft.markdown.split('\n');
  return [first, '', `> The model did not write this page (${reason}); this is the survey's version.`, ...rest].join('\n');
}

function addRunUsage(total: RunTokenUsage, u: Usage, credits: number): RunTokenUsage {
  return {
    inputTokens: total.inputTokens + u.inputTokens,
    outputTokens: total.outputTokens + u.outputTokens,
    cacheCreationTokens: total.cacheCreationTokens + u.cacheWriteTokens,
    cacheReadTokens: total.cacheReadTokens + u.cacheReadTokens,
    thinkingTokens: total.thinkingTokens + u.thinkingTokens,
    serviceCredits: Math.round((total.serviceCredits + credits) * 1_000_000) / 1_000_000,
  };
}

type Run = { id: string; organizationId: string; creatorId: string; model: string | null; checkpoint: unknown };

/**
 * The model path: the agent loop (src/agent/) writes the prose of each page that was not
 * reused, from the page's survey version as its brief, reading a checkout through read-only tools.
 * A page whose turn fails, or whose prose cites no file of the repository, keeps its survey
 * version and says why. Each page's result and the usage so far are checkpointed on the run, so
 * a run resumed after a crash does not pay for the same page twice. Usage is counted like a
 * session's (credits from the model's pricing) and recorded as analytics token usage of the
 * run's creator.
 */
export async function writeWithModel(
  deps: GenerateJobDeps,
  run: Run,
  gitDir: string,
  input: WriteInput,
  drafts: DraftPage[],
  ctx: Pick<JobContext, 'signal' | 'log'>,
): Promise<RunTokenUsage> {
  const saved = run.checkpoint as Checkpoint | null;
  const checkpoint: Checkpoint = {
    pages: { ...(saved?.pages ?? {}) },
    usage: saved?.usage ?? { inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0, serviceCredits: 0 },
  };
  const apply = (draft: DraftPage) => {
    const done = checkpoint.pages[draft.id];
    if (!done) return false;
    draft.markdown = done.markdown;
    draft.degraded = done.degraded;
    for (const p of done.cited) if (!draft.sources.some((s) => s.path === p)) draft.sources.push({ path: p, blobSha: input.survey.blobs.get(p)!, lines: [] });
    return true;
  };
  const pending = drafts.filter((d) => !d.reused && !apply(d));
  if (!pending.length) return checkpoint.usage;

  let resolved;
  try {
    const settings = await enterpriseSettingsOf(deps.prisma, run.organizationId);
    resolved = resolveModel(run.model!, openCustomModelKeys(settings, deps.secrets), process.env, deps.egress.fetch);
  } catch (err) {
    const reason = (err as Error).message;
    for (const d of pending) {
      d.markdown = degradedVersion(d, reason);
      d.degraded = reason;
    }
    return checkpoint.usage;
  }
  const model = createModelClient(resolved.config);
  await fs.mkdir(deps.scratchRoot, { recursive: true });
  const root = await fs.mkdtemp(path.join(deps.scratchRoot, 'checkout-'));
  try {
    await writeCheckout(gitRepo(gitDir), root, ctx.signal);
    const host = localToolHost(root, 'the repository');
    const tools = readOnlyTools();
    for (const draft of pending) {
      const messages: RuntimeMessage[] = [];
      const events: AnalyticsEvent[] = [];
      const result = await runTurn({
        model,
        tools,
        host,
        autonomyLevel: 'off',
        history: [{ role: 'user', content: [{ type: 'text', text: brief(draft) }] }],
        system: SYSTEM,
        signal: ctx.signal,
        maxSteps: MAX_STEPS_PER_PAGE,
        onMessage: async (m) => void messages.push(m),
        onUsage: (u) => {
          const credits = creditsFor(u, resolved.pricing);
          checkpoint.usage = addRunUsage(checkpoint.usage, u, credits);
          events.push({
            organizationId: run.organizationId,
            userId: run.creatorId,
            occurredAt: deps.clock.now(),
            kind: 'token_usage',
            model: run.model!,
            modelTier: 'standard',
            inputTokens: u.inputTokens,
            outputTokens: u.outputTokens,
            cacheReadTokens: u.cacheReadTokens,
            cacheWriteTokens: u.cacheWriteTokens,
            serviceCredits: credits,
          });
        },
      });
      ctx.signal.throwIfAborted();
      const prose = lastText(messages);
      const cited = citedPaths(prose, input.survey.blobs);
      let reason: string | null = null;
      if (result.stopReason === 'error') reason = `the model call failed: ${result.error}`;
      else if (result.stopReason === 'max_steps') reason = `the model used its ${MAX_STEPS_PER_PAGE} steps without finishing`;
      else if (prose.length < MIN_PROSE_CHARS) reason = 'the model answered with no prose';
      else if (!cited.length) reason = 'the model cited no file of the repository';
      checkpoint.pages[draft.id] = reason
        ? { markdown: degradedVersion(draft, reason), degraded: reason, cited: [] }
        : { markdown: withProse(draft, prose), degraded: null, cited };
      apply(draft);
      await deps.prisma.$transaction(async (tx) => {
        await tx.wikiRun.update({ where: { id: run.id }, data: { checkpoint: checkpoint as object, tokenUsage: checkpoint.usage as object } });
        await recordEvents(tx, events);
      });
      if (reason) ctx.log.warn({ runId: run.id, page: draft.id, reason }, 'wiki page degraded to its survey version');
    }
  } finally {
    await fs.rm(root, { recursive: true, force: true });
  }
  return checkpoint.usage;
}
