import { detectApps } from './apps.ts';
import { CRITERIA } from './catalogue.ts';
import type { Criterion, Score } from './criteria/index.ts';
import { readGitState, type GitState } from './git-state.ts';
import { openRepoContext } from './repo-context.ts';
import type { RepoWorkspace } from '../../repos/workspace.ts';

export interface EvaluationResult extends GitState {
  apps: Record<string, { description: string }>;
  report: Record<string, Score>;
}

/** Detects the applications of the checkout at `dir` and scores every criterion. */
export async function evaluateCheckout(
  ws: RepoWorkspace,
  dir: string,
  opts: { signal?: AbortSignal; criteria?: readonly Criterion[] } = {},
): Promise<EvaluationResult> {
  const git = await readGitState(ws, dir, opts.signal);
  const base = await openRepoContext(ws, dir, opts.signal);
  const apps = await detectApps(base);
  const ctx = { ...base, apps };
  const report: Record<string, Score> = {};
  for (const criterion of opts.criteria ?? CRITERIA) {
    opts.signal?.throwIfAborted();
    report[criterion.id] = await criterion.evaluate(ctx);
  }
  return {
    ...git,
    apps: Object.fromEntries(apps.map((a) => [a.path, { description: a.description }])),
    report,
  };
}
