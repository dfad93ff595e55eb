/**
 * The automations agentplane writes workflows for. Each mode says when the workflow runs (its
 * `on` triggers and job condition) and what the agent is asked to do.
 */
export const MODE_IDS = ['code-review', 'ci-fix', 'wiki-refresh', 'custom'] as const;
export type ModeId = (typeof MODE_IDS)[number];

/** The hosted platform's event names (`changes.githubEvents`) and the workflow triggers each stands for. */
const EVENT_TRIGGERS = {
  'pull-request': { pull_request: ['opened', 'synchronize', 'reopened', 'ready_for_review'] },
  'pr-opened': { pull_request: ['opened'] },
  'comment-added': { issue_comment: ['created'] },
  push: { push: [] },
  'label-change': { pull_request: ['labeled', 'unlabeled'] },
  'checks-completed': { workflow_run: ['completed'] },
} as const satisfies Record<string, Record<string, readonly string[]>>;
export type EventId = keyof typeof EVENT_TRIGGERS;
export const EVENT_IDS = Object.keys(EVENT_TRIGGERS) as EventId[];

export interface ModeContext {
  defaultBranch: string;
  schedule?: string;
  events?: EventId[];
  /** workflow_run needs the names of the workflows it follows (ci-fix, checks-completed). */
  workflows: string[];
}

export interface ModeDefinition {
  title: string;
  on(ctx: ModeContext): Record<string, unknown>;
  /** The job's `if:` (skips drafts, forks, successful runs). */
  condition?: string;
  /** One run at a time per this key; a newer run cancels the older one. */
  concurrencyKey?: string;
  /** What the agent is asked; the run adds the pull request's or push's context. */
  prompt: string;
}

/** `on:` for a set of events: types are merged per trigger. */
function triggersFor(events: readonly EventId[], workflows: string[]): Record<string, unknown> {
  const on: Record<string, Set<string>> = {};
  for (const e of events) for (const [trigger, types] of Object.entries(EVENT_TRIGGERS[e])) for (const t of types) (on[trigger] ??= new Set()).add(t);
  for (const e of events) for (const trigger of Object.keys(EVENT_TRIGGERS[e])) on[trigger] ??= new Set();
  return Object.fromEntries(
    Object.entries(on).map(([trigger, types]) => {
      const spec: Record<string, unknown> = types.size ? { types: [...types] } : {};
      if (trigger === 'workflow_run') spec.workflows = workflows;
      return [trigger, Object.keys(spec).length ? spec : null];
    }),
  );
}

export const MODES: Record<ModeId, ModeDefinition> = {
  'code-review': {
    title: 'code review',
    on: (ctx) => triggersFor(['pull-request'], ctx.workflows),
    condition: '${{ !github.event.pull_request.draft }}',
    concurrencyKey: '${{ github.event.pull_request.number }}',
    prompt:
      'Review this pull request. Read the diff below and, where needed, the repository. Report bugs, risky changes, missing tests and unclear code, ' +
      'each with the file and line, most important first. Be concise; say so plainly if you find nothing worth changing.',
  },
  'ci-fix': {
    title: 'CI fix',
    on: (ctx) => ({ workflow_run: { workflows: ctx.workflows, types: ['completed'] } }),
    // Never for forks: the run's head repository must be this one.
    condition:
      "${{ github.event.workflow_run.conclusion == 'failure' && github.event.workflow_run.event == 'pull_request' && github.event.workflow_run.head_repository.full_name == github.repository }}",
    concurrencyKey: '${{ github.event.workflow_run.head_branch }}',
    prompt: 'A CI run of this pull request failed. Find the cause from the failing jobs and the diff, and propose the smallest fix, as a patch.',
  },
  'wiki-refresh': {
    title: 'wiki refresh',
    on: (ctx) => ({ push: { branches: [ctx.defaultBranch] } }),
    concurrencyKey: '${{ github.ref }}',
    // No session: a run of this mode creates a wiki run of the pushed branch (run-serve.ts).
    prompt: '',
  },
  custom: {
    title: 'custom automation',
    on: (ctx) => ({
      ...triggersFor(ctx.events ?? [], ctx.workflows),
      ...(ctx.schedule ? { schedule: [{ cron: ctx.schedule }] } : {}),
      workflow_dispatch: null,
    }),
    prompt: '',
  },
};
