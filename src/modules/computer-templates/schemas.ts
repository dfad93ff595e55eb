import { z } from 'zod';
import { PageQuerySchema, PaginationSchema } from '../../http/pagination.ts';
import { WarmPoolSize } from '../computers/pool/schemas.ts';
import { MAX_REPOS, RepoUrl } from '../computers/schemas.ts';

const TemplateName = z.string().trim().min(1, 'name must not be empty').max(100, 'name must be at most 100 characters');
const SetupScript = z
  .string()
  .max(10_000, 'setupScript must be at most 10000 characters')
  .meta({ description: 'Run with bash in the home directory of each computer made from the template, after the clones' });

/** A directory inside the repository: '' (or '.') is its root; no '..', no leading '/'. */
const ProgramPath = z
  .string()
  .max(1024, 'program.path must be at most 1024 characters')
  .refine(
    (p) => !p.split('/').includes('..') && !p.startsWith('/') && !p.includes('\\'),
    'program.path must be a directory inside the repository, without ".." or a leading "/"',
  )
  .transform((p) => p.replace(/^(\.\/)+|\/+$/g, '').replace(/^\.$/, ''))
  .meta({ description: 'Directory holding Pulumi.yaml, relative to the repository root ("" or "." for the root)' });

/** git check-ref-format's rules for a branch or tag name; a commit id is 7 to 40 hex digits and passes them. */
const ProgramRef = z
  .string()
  .min(1, 'program.ref must not be empty')
  .max(255, 'program.ref must be at most 255 characters')
  .refine(
    (r) =>
      !/[\s\u0000-\u001f\u007f~^:?*[\\]/.test(r) &&
      !r.includes('..') &&
      !r.includes('@{') &&
      !r.includes('//') &&
      !/^[-/.]|[/.]$|\.lock$/.test(r) &&
      !r.split('/').some((part) => part.startsWith('.')),
    'program.ref must be a branch, a tag or a commit id',
  )
  .meta({ description: 'A branch, a tag or a commit id; a branch or tag is followed to each new commit' });

const ProgramSourceSchema = z
  .strictObject({
    repository: RepoUrl.meta({ description: 'A public URL, or one the organization reaches through its source-control integration' }),
    path: ProgramPath.default(''),
    ref: ProgramRef,
  })
  .meta({ id: 'ProgramSource', description: 'A Pulumi YAML project (Pulumi.yaml, runtime: yaml) at path of repository on ref' });

const PoolUpdateSchema = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('Recreate') }),
    z.strictObject({ type: z.literal('OnReplenish') }),
    z.strictObject({
      type: z.literal('RollingUpdate'),
      maxUnavailable: z.int().min(1, 'maxUnavailable must be at least 1').max(100, 'maxUnavailable must be at most 100').default(1),
    }),
  ])
  .meta({
    id: 'PoolUpdate',
    description:
      'How a warm pool moves to a new version: Recreate replaces every ready member now; OnReplenish gives new members the new version ' +
      'while old ones serve until claimed; RollingUpdate replaces at most maxUnavailable ready members at a time',
  });
export type PoolUpdate = z.infer<typeof PoolUpdateSchema>;

const RegistrationTimeout = z
  .int()
  .min(30, 'registrationTimeoutSeconds must be at least 30')
  .max(3600, 'registrationTimeoutSeconds must be at most 3600')
  .meta({ description: 'How long a machine that dials in (output agent: true) has to register before its computer fails' });

const VersionRef = z.strictObject({ id: z.string(), commit: z.string() }).meta({ id: 'ComputerTemplateVersionRef' });

const TEMPLATE_STATUSES = ['resolving', 'previewing', 'ready', 'failed'] as const;

export const ComputerTemplateSchema = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    provider: z
      .string()
      .optional()
      .meta({ description: 'Managed provider of computers made from it, unless the create request names one; `program` when it names a program' }),
    repos: z.array(z.string()),
    autoInstallDeps: z.boolean(),
    setupScript: z.string().optional(),
    warmPoolSize: z.number().meta({ description: 'Computers made from it kept provisioned ahead (0: no warm pool)' }),
    program: ProgramSourceSchema.optional().meta({ description: 'The Pulumi YAML program its computers run; absent: the provider’s built-in program' }),
    status: z.enum(TEMPLATE_STATUSES).optional().meta({
      description: 'With a program: resolving (no commit yet), previewing (a new commit), ready (the current version serves), failed (statusMessage says why)',
    }),
    statusMessage: z.string().optional(),
    currentVersion: VersionRef.optional().meta({ description: 'What new computers and pool members get: the newest commit whose preview passed' }),
    candidateVersion: VersionRef.optional().meta({ description: 'The newest commit on the ref while it is previewed, or after its preview failed' }),
    poolUpdate: PoolUpdateSchema,
    registrationTimeoutSeconds: z.number(),
    webhookUrl: z.string().meta({ description: "The forge's push webhook: a push resolves the program's ref at once" }),
    createdAt: z.number().meta({ description: 'Unix ms' }),
    updatedAt: z.number().meta({ description: 'Unix ms' }),
  })
  .meta({ id: 'ComputerTemplate' });
export type ComputerTemplateView = z.infer<typeof ComputerTemplateSchema>;

export const CreatedTemplateSchema = ComputerTemplateSchema.extend({
  webhookSecret: z.string().optional().meta({ description: 'Signs the push webhook (HMAC-SHA256); shown once, when it is made' }),
}).meta({ id: 'CreatedComputerTemplate' });

export const CreateTemplateBody = z.strictObject({
  name: TemplateName,
  provider: z.string().min(1).optional(),
  repos: z.array(RepoUrl).max(MAX_REPOS, `at most ${MAX_REPOS} repositories`).optional(),
  autoInstallDeps: z.boolean().optional(),
  setupScript: SetupScript.optional(),
  warmPoolSize: WarmPoolSize.optional(),
  program: ProgramSourceSchema.optional(),
  poolUpdate: PoolUpdateSchema.optional(),
  registrationTimeoutSeconds: RegistrationTimeout.optional(),
});
export type CreateTemplateInput = z.infer<typeof CreateTemplateBody>;

export const UpdateTemplateBody = z.strictObject({
  name: TemplateName.optional(),
  provider: z.string().min(1).nullable().optional(),
  repos: z.array(RepoUrl).max(MAX_REPOS, `at most ${MAX_REPOS} repositories`).optional(),
  autoInstallDeps: z.boolean().optional(),
  setupScript: SetupScript.nullable().optional(),
  warmPoolSize: WarmPoolSize.optional(),
  program: ProgramSourceSchema.nullable().optional().meta({ description: 'null: computers made from it run the provider’s built-in program again' }),
  poolUpdate: PoolUpdateSchema.optional(),
  registrationTimeoutSeconds: RegistrationTimeout.optional(),
});
export type UpdateTemplateInput = z.infer<typeof UpdateTemplateBody>;

export const TemplateIdParams = z.object({ templateId: z.string().min(1).meta({ description: 'Template id' }) });
export const TemplateListResponse = z.strictObject({ templates: z.array(ComputerTemplateSchema) });

// ---- versions ----

const VERSION_STATUSES = ['previewing', 'ready', 'failed'] as const;

export const TemplateVersionSchema = z
  .strictObject({
    id: z.string(),
    commit: z.string(),
    status: z.enum(VERSION_STATUSES).meta({ description: 'previewing, ready (may be rolled out) or failed (never rolled out)' }),
    current: z.boolean().meta({ description: 'The version new computers and pool members get' }),
    preview: z
      .array(z.strictObject({ type: z.string(), name: z.string() }))
      .nullable()
      .meta({ description: 'The objects `pulumi preview` said the program creates; null until it passed' }),
    error: z.string().nullable().meta({ description: "Pulumi's error when the preview failed" }),
    computers: z
      .strictObject({ poolMembers: z.number().int(), owned: z.number().int() })
      .meta({ description: 'Computers running this version: warm pool members and computers someone owns' }),
    createdAt: z.number().meta({ description: 'Unix ms' }),
    previewedAt: z.number().nullable().meta({ description: 'Unix ms' }),
  })
  .meta({ id: 'ComputerTemplateVersion' });
export type TemplateVersionView = z.infer<typeof TemplateVersionSchema>;

export const VersionsQuery = PageQuerySchema;
export const VersionsResponse = z
  .strictObject({ versions: z.array(TemplateVersionSchema), pagination: PaginationSchema })
  .meta({ id: 'ComputerTemplateVersions' });
export const VersionIdParams = TemplateIdParams.extend({ versionId: z.string().min(1).meta({ description: 'Version id' }) });

export const PushResponse = z.strictObject({ queued: z.boolean(), reason: z.string().optional() });
