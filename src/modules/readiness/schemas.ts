import { z } from 'zod';
import { repoKey, scratchCloneProblem } from '../../repos/policy.ts';

const REASONING_EFFORTS = ['low', 'medium', 'high', 'off'] as const;
/** Ingested report maps are bounded so one report stays one reasonable row. */
const MAX_APPS = 1000;
const MAX_CRITERIA = 500;
const MAX_LIST_LIMIT = 1000;
const DEFAULT_LIST_LIMIT = 50;

const ms = z.number().int().meta({ description: 'Unix milliseconds' });

const repoUrl = z
  .string()
  .max(2048)
  .refine((v) => repoKey(v) !== undefined, 'must be a repository URL, e.g. https://github.com/acme/app')
  .meta({ description: 'The evaluated repository', example: 'https://github.com/acme/app' });

const CriterionEvaluationSchema = z
  .strictObject({
    numerator: z.number().min(0, 'must be at least 0').meta({ description: '0 to denominator' }),
    denominator: z.number().min(1, 'must be at least 1'),
    rationale: z.string().trim().min(1, 'must not be empty: say what evidence the score rests on').max(10_000),
  })
  .refine((e) => e.numerator <= e.denominator, { message: 'numerator must not exceed denominator', path: ['numerator'] })
  .meta({ id: 'ReadinessCriterionEvaluation' });

const AppSchema = z.strictObject({ description: z.string().trim().min(1, 'must not be empty').max(2000) });

const ModelUsedSchema = z
  .strictObject({
    id: z.string().trim().min(1, 'must not be empty').max(200),
    reasoningEffort: z.enum(REASONING_EFFORTS, { error: `must be one of ${REASONING_EFFORTS.join(', ')}` }),
  })
  .meta({ id: 'ReadinessModelUsed' });

const criterionId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/, 'criterion ids are 1-100 letters, digits, "_", "." or "-", e.g. lint_config');
const appPath = z.string().min(1, 'application paths must not be empty').max(1000);

const mapOf = <T extends z.ZodType>(key: z.ZodString, value: T, max: number, what: string) =>
  z.record(key, value).refine((m) => Object.keys(m).length <= max, `at most ${max} ${what}`);

/** A report as a client sends it for ingestion: the stored report minus reportId and createdAt. */
export const ReportInputSchema = z
  .strictObject({
    repoUrl,
    apps: mapOf(appPath, AppSchema, MAX_APPS, 'applications').meta({ description: 'Application path -> {description}' }),
    report: mapOf(criterionId, CriterionEvaluationSchema, MAX_CRITERIA, 'criteria')
      .refine((m) => Object.keys(m).length > 0, 'must hold at least one criterion')
      .meta({ description: 'Criterion id -> evaluation' }),
    commitHash: z.string().min(1).max(200).nullable().optional(),
    branch: z.string().min(1).max(500).nullable().optional(),
    hasLocalChanges: z.boolean().nullable().optional().meta({ description: 'Uncommitted changes existed' }),
    hasNonRemoteCommits: z.boolean().nullable().optional().meta({ description: 'Unpushed commits existed' }),
    modelUsed: ModelUsedSchema.nullable().optional(),
    agentVersion: z.string().min(1).max(200).nullable().optional().meta({ description: 'Version of the client that produced the report' }),
  })
  .meta({ id: 'ReadinessReportInput' });
export type ReportInput = z.infer<typeof ReportInputSchema>;

export const ReportSchema = z
  .strictObject({
    reportId: z.uuid(),
    createdAt: ms,
    repoUrl: z.string(),
    apps: z.record(z.string(), z.strictObject({ description: z.string() })),
    report: z.record(z.string(), z.strictObject({ numerator: z.number(), denominator: z.number(), rationale: z.string() })),
    commitHash: z.string().nullable(),
    branch: z.string().nullable(),
    hasLocalChanges: z.boolean().nullable(),
    hasNonRemoteCommits: z.boolean().nullable(),
    modelUsed: z.strictObject({ id: z.string(), reasoningEffort: z.enum(REASONING_EFFORTS) }).nullable(),
    agentVersion: z.string().nullable(),
  })
  .meta({ id: 'ReadinessReport' });
export type Report = z.infer<typeof ReportSchema>;

export const ReportListSchema = z.strictObject({ reports: z.array(ReportSchema) }).meta({ id: 'ReadinessReportList' });

export const ListQuerySchema = z.object({
  repoId: z
    .string()
    .min(1)
    .max(2048)
    .refine((v) => repoKey(v) !== undefined, 'must be a repository URL, e.g. https://github.com/acme/app')
    .optional()
    .meta({ description: 'Only reports of this repository (URL, matched after normalization)' }),
  limit: z
    .string()
    .regex(/^[0-9]+$/, `must be a positive integer (at most ${MAX_LIST_LIMIT})`)
    .optional()
    .transform((v) => (v === undefined ? DEFAULT_LIST_LIMIT : Number(v)))
    .pipe(z.number().int().min(1, 'must be a positive integer').max(MAX_LIST_LIMIT, `must be at most ${MAX_LIST_LIMIT}`))
    .meta({ description: `Maximum number of reports (default ${DEFAULT_LIST_LIMIT}, at most ${MAX_LIST_LIMIT})`, param: { example: '20' } }),
  startAfter: z.uuid('must be a reportId (a UUID) from a previous page').optional().meta({ description: 'A reportId: the page starts after that report' }),
});
export type ListQuery = z.infer<typeof ListQuerySchema>;

/** A git ref name the evaluator may pass to `git clone --branch` (git check-ref-format, simplified). */
const branchName = z
  .string()
  .min(1)
  .max(250)
  .regex(/^(?!-)(?!.*\.\.)(?!.*@\{)(?!.*\/\/)(?!\/)(?!.*\/$)(?!.*\.lock$)(?!.*\.$)[^\s~^:?*[\\\x00-\x1f\x7f]+$/, 'is not a valid git branch name');

export const EvaluateBodySchema = z
  .strictObject({
    repoUrl: z
      .string()
      .max(2048)
      .superRefine((v, ctx) => {
        const problem = scratchCloneProblem(v);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .meta({ description: 'Repository to clone and evaluate (https, http, ssh or git URL)' }),
    branch: branchName.optional().meta({ description: 'Branch to evaluate; default: the remote HEAD' }),
    computerId: z.string().min(1).max(200).optional().meta({ description: 'Clone and evaluate on this computer instead of the control plane' }),
  })
  .meta({ id: 'ReadinessEvaluateRequest' });
export type EvaluateBody = z.infer<typeof EvaluateBodySchema>;

const EVALUATION_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type EvaluationStatus = (typeof EVALUATION_STATUSES)[number];

export const EvaluationSchema = z
  .strictObject({
    evaluationId: z.uuid(),
    status: z.enum(EVALUATION_STATUSES),
    repoUrl: z.string(),
    branch: z.string().nullable(),
    computerId: z.string().nullable(),
    reportId: z.uuid().nullable().meta({ description: 'The report produced, once succeeded' }),
    level: z.number().int().min(1).max(5).nullable().meta({ description: 'Maturity level (1-5) of that report' }),
    error: z.string().nullable().meta({ description: 'Why the evaluation failed' }),
    createdAt: ms,
    startedAt: ms.nullable(),
    completedAt: ms.nullable(),
  })
  .meta({ id: 'ReadinessEvaluation' });
export type Evaluation = z.infer<typeof EvaluationSchema>;

export const EvaluationParamsSchema = z.object({ evaluationId: z.string().min(1) });
