import YAML from 'yaml';
import { z } from 'zod';
import { PageQuerySchema, PaginationSchema } from '../../http/pagination.ts';
import { cronProblem } from './cron.ts';
import { EVENT_IDS, MODE_IDS } from './modes.ts';
import { PARAM_KEYS } from './workflow-file.ts';

const MAX_EDIT_REPOS = 50;
const WORKFLOW_PATH = /^\.(github|gitea|forgejo)\/workflows\/[A-Za-z0-9._-]+\.ya?ml$/;

const Integration = z.strictObject({
  connected: z.boolean(),
  provider: z.enum(['github', 'gitea']).optional(),
  baseUrl: z.string().optional(),
});

export const OwnersResponse = z
  .strictObject({
    owners: z.array(z.strictObject({ login: z.string(), type: z.enum(['User', 'Organization']) })),
    integration: Integration,
  })
  .meta({ id: 'CiRepositoryOwners' });

export const RepositoriesQuery = z.object({ owner: z.string().min(1).optional().meta({ description: 'Only repositories of this owner' }) });
export const RepositoriesResponse = z
  .strictObject({
    repositories: z.array(
      z.strictObject({
        repoFullName: z.string(),
        owner: z.string(),
        name: z.string(),
        private: z.boolean(),
        defaultBranch: z.string(),
        url: z.string(),
      }),
    ),
    integration: Integration,
  })
  .meta({ id: 'CiRepositories' });

export const ScanQuery = z.object({
  forceRefresh: z.enum(['true', 'false'], { message: 'forceRefresh must be "true" or "false"' }).optional(),
});
const ScannedWorkflowSchema = z.strictObject({
  repoFullName: z.string(),
  filePath: z.string(),
  workflowName: z.string(),
  triggerEvents: z.array(z.string()),
  scheduleCron: z.string().optional(),
  droidActionInputs: z.record(z.string(), z.string()),
  templateId: z.enum(MODE_IDS).optional(),
});
export const ScanResponse = z
  .strictObject({
    workflows: z.array(ScannedWorkflowSchema),
    /** agentplane extension: repositories whose scan failed, with the reason. */
    failures: z.array(z.strictObject({ repoFullName: z.string(), filePath: z.string().optional(), error: z.string() })),
    repositoriesScanned: z.number().int(),
    scannedAt: z.number().int().nullable(),
    cacheTtlMs: z.number().int(),
    cached: z.boolean(),
    integration: Integration,
  })
  .meta({ id: 'CiScan' });

/** YAML lines that adjust the generated inputs; only the known keys. */
const YamlParams = z
  .string()
  .max(10_000)
  .superRefine((text, ctx) => {
    let parsed: unknown;
    try {
      parsed = YAML.parse(text);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `not YAML: ${(err as Error).message.split('\n')[0]}` });
      return;
    }
    if (parsed === null || parsed === undefined) return;
    if (typeof parsed !== 'object' || Array.isArray(parsed)) {
      ctx.addIssue({ code: 'custom', message: 'must be YAML key: value lines' });
      return;
    }
    for (const [key, value] of Object.entries(parsed)) {
      if (!(PARAM_KEYS as readonly string[]).includes(key)) {
        ctx.addIssue({ code: 'custom', path: [key], message: `unknown input "${key}"; known: ${PARAM_KEYS.join(', ')}` });
      } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'must be a scalar or a list' });
      }
    }
  });

/** What an edit changes; config's CiAutomation documents declare the same settings (src/modules/config). */
export const EditChanges = z.strictObject({
  name: z.string().min(1, 'name must not be empty').max(200).optional(),
  yamlParams: YamlParams.optional(),
  customPrompt: z.string().max(20_000).optional(),
  schedule: z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      const problem = v ? cronProblem(v) : undefined;
      if (problem) ctx.addIssue({ code: 'custom', message: `not a 5-field cron expression: ${problem}` });
    }),
  githubEvents: z.array(z.enum(EVENT_IDS, { message: `unknown event; known: ${EVENT_IDS.join(', ')}` })).optional(),
});

const ACTION_MESSAGE = 'Provide action ("edit"|"delete"|"create") and at least one repo.';

export const EditBody = z
  .object({
    action: z.enum(['create', 'edit', 'delete'], { message: ACTION_MESSAGE }),
    automationName: z.string().min(1).max(200).optional(),
    factoryAutomationId: z.uuid('factoryAutomationId must be a UUID').optional(),
    modeId: z.enum(MODE_IDS, { message: `unknown mode; known: ${MODE_IDS.join(', ')}` }).optional(),
    repos: z
      .array(
        z.strictObject({
          repoFullName: z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'repoFullName must be owner/name'),
          filePath: z
            .string()
            .regex(WORKFLOW_PATH, 'filePath must be a .yml or .yaml file in .github/workflows, .gitea/workflows or .forgejo/workflows')
            .optional(),
        }),
      )
      .min(1, ACTION_MESSAGE)
      .max(MAX_EDIT_REPOS, `at most ${MAX_EDIT_REPOS} repositories per request`),
    changes: EditChanges.optional(),
    /** agentplane extension: the computer the automation's sessions run on. */
    computerId: z.string().min(1).optional(),
  })
  .superRefine((b, ctx) => {
    if (b.action === 'edit' && !b.changes) ctx.addIssue({ code: 'custom', path: ['changes'], message: 'Edit action requires a `changes` payload.' });
    if (b.action === 'create' && !b.modeId)
      ctx.addIssue({ code: 'custom', path: ['modeId'], message: 'create requires modeId (code-review, ci-fix, wiki-refresh or custom)' });
    if (b.action !== 'delete' && b.modeId === 'custom') {
      if (b.action === 'create' && !b.changes?.customPrompt)
        ctx.addIssue({ code: 'custom', path: ['changes', 'customPrompt'], message: 'the custom mode needs a customPrompt' });
      if (b.action === 'create' && !b.changes?.schedule && !b.changes?.githubEvents?.length) {
        ctx.addIssue({ code: 'custom', path: ['changes', 'schedule'], message: 'the custom mode needs a schedule or at least one of githubEvents' });
      }
    }
    if ((b.action === 'edit' || b.action === 'delete') && !b.factoryAutomationId && b.repos.some((r) => !r.filePath)) {
      ctx.addIssue({ code: 'custom', path: ['repos'], message: `${b.action} needs each repo's filePath, or factoryAutomationId` });
    }
  });
export type EditBody = z.infer<typeof EditBody>;

export const EditResponse = z
  .strictObject({
    sessions: z.array(
      z.strictObject({
        repoFullName: z.string(),
        filePath: z.string().optional(),
        sessionId: z.string().optional(),
        prUrl: z.string().optional(),
        message: z.string().optional(),
        error: z.string().optional(),
      }),
    ),
    /** agentplane extensions: the automation and the job that records this request. */
    factoryAutomationId: z.string().optional(),
    jobId: z.string(),
  })
  .meta({ id: 'CiEditResult' });

export const JobsQuery = PageQuerySchema;
export const CiJobSchema = z.strictObject({
  id: z.string(),
  kind: z.enum(['edit', 'run']),
  action: z.string().nullable(),
  automationId: z.string().nullable(),
  automationName: z.string().nullable(),
  modeId: z.string().nullable(),
  status: z.string(),
  repos: z.array(z.record(z.string(), z.unknown())),
  detail: z.record(z.string(), z.unknown()),
  createdAt: z.number().int(),
  finishedAt: z.number().int().nullable(),
});
export const JobsResponse = z.strictObject({ jobs: z.array(CiJobSchema), pagination: PaginationSchema }).meta({ id: 'CiJobs' });

export const RunsQuery = PageQuerySchema;
export const CiRunSchema = z.strictObject({
  id: z.number().int(),
  repoFullName: z.string(),
  workflowPath: z.string(),
  automationId: z.string().nullable(),
  name: z.string(),
  status: z.string(),
  conclusion: z.string().nullable(),
  event: z.string(),
  branch: z.string().nullable(),
  headSha: z.string().nullable(),
  pullRequests: z.array(z.number().int()),
  url: z.string(),
  createdAt: z.number().int().nullable(),
  updatedAt: z.number().int().nullable(),
  startedAt: z.number().int().nullable(),
  completedAt: z.number().int().nullable(),
});
export const RunsResponse = z
  .strictObject({
    runs: z.array(CiRunSchema),
    pagination: PaginationSchema,
    failures: z.array(z.strictObject({ repoFullName: z.string(), error: z.string() })),
    integration: Integration,
  })
  .meta({ id: 'CiRuns' });

/** agentplane extension: `agentplane ci run` reports a run's start (POST /automations/ci/jobs) and its end. */
export const RunStartBody = z.strictObject({
  automationId: z.uuid('automationId must be a UUID'),
  repoFullName: z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'repoFullName must be owner/name'),
  event: z.string().min(1).max(100),
  pullRequestNumber: z.int().positive().optional(),
  ref: z.string().max(500).optional(),
  sha: z.string().max(100).optional(),
  runUrl: z.string().max(2048).optional(),
  /** The CI runner itself, registered for the job as a byom computer (`register-runner`). */
  computerId: z.string().min(1).optional(),
});
export type RunStartBody = z.infer<typeof RunStartBody>;
export const RunStartResponse = z
  .strictObject({
    jobId: z.string(),
    status: z
      .enum(['running', 'paused', 'skipped', 'wiki'])
      .meta({ description: '`wiki`: a wiki-refresh run created the wiki run `wikiRunId`; nothing more to do' }),
    detail: z.string().optional(),
    modeId: z.string(),
    computerId: z.string().optional(),
    prompt: z.string().optional(),
    wikiRunId: z.string().optional(),
  })
  .meta({ id: 'CiRunStart' });
export const JobIdParams = z.object({ jobId: z.string().min(1) });
export const RunCompleteBody = z.strictObject({
  conclusion: z.enum(['success', 'failure']),
  sessionId: z.string().min(1).optional(),
  result: z.string().max(65_000).optional(),
  error: z.string().max(10_000).optional(),
});
export type RunCompleteBody = z.infer<typeof RunCompleteBody>;
