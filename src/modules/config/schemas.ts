import { z } from 'zod';
import { PageQuerySchema, PaginationSchema } from '../../http/pagination.ts';
import { EditBody, EditChanges } from '../automations/schemas.ts';
import { PARAM_KEYS } from '../automations/workflow-file.ts';
import { CreateTemplateBody } from '../computer-templates/schemas.ts';
import { RepoUrl } from '../computers/schemas.ts';
import { ProviderPoolBody } from '../computers/pool/schemas.ts';
import { CreateIntegrationBody } from '../integrations/schemas.ts';
import { EnterpriseControlsBodySchema, GlobalLimitBodySchema, InviteBodySchema, UserLimitEntrySchema } from '../organization/schemas.ts';
import { CreateServiceAccountBody } from '../service-accounts/schemas.ts';
import { CreateWebhookBody } from '../webhooks/schemas.ts';

export { PageQuerySchema };

export const API_VERSION = 'agentplane.dev/v1';

// ---- secrets ----

const SecretName = z
  .string()
  .regex(
    /^[a-z0-9]([a-z0-9._-]{0,126}[a-z0-9])?$/,
    'a secret name is 1-128 lower-case letters, digits, ".", "_" or "-", starting and ending with a letter or digit',
  )
  .meta({ description: 'Name of a secret set with PUT /api/v0/config/secrets/{name}' });

/** Where a document names a secret instead of holding its value: `tokenFrom: {secret: NAME}`. */
const SecretRef = z.strictObject({ secret: SecretName }).meta({ id: 'ConfigSecretRef', description: 'A secret set through the API, by name' });

export const SecretParams = z.object({ name: SecretName });
export const PutSecretBody = z.strictObject({
  value: z
    .string()
    .min(1, 'value must not be empty')
    .max(16_384, 'value must be at most 16384 characters')
    .meta({ description: 'Stored encrypted, never returned' }),
});
const SecretSchema = z
  .strictObject({ name: z.string(), createdAt: z.number().int(), updatedAt: z.number().int() })
  .meta({ id: 'ConfigSecret', description: 'A secret, without its value' });
export type SecretView = z.infer<typeof SecretSchema>;
export const SecretResponse = SecretSchema;
export const SecretListResponse = z.strictObject({ secrets: z.array(SecretSchema) }).meta({ id: 'ConfigSecretList' });

// ---- the kinds: each spec is the API's own request schema, with secrets by reference ----

/** A template's name is its document's name. */
export const ComputerTemplateSpec = CreateTemplateBody.omit({ name: true }).meta({ id: 'ComputerTemplateSpec' });
/** metadata.name is the provider; the size of its pool of plain computers. */
export const ProviderPoolSpec = ProviderPoolBody.meta({ id: 'ProviderPoolSpec' });
/** metadata.name is the account's name; keys are never declared. */
export const ServiceAccountSpec = CreateServiceAccountBody.omit({ name: true })
  .partial({ status: true })
  .meta({ id: 'ServiceAccountSpec', description: 'status defaults to active' });
export const MemberSpec = InviteBodySchema.meta({ id: 'MemberSpec' });
export const CreditLimitsSpec = z
  .strictObject({
    limit: GlobalLimitBodySchema.shape.limit.optional().meta({ description: 'Global per-user credits limit; absent or null: none' }),
    users: z.array(UserLimitEntrySchema).max(10_000).optional().meta({ description: 'Per-user overrides; users left out have none' }),
  })
  .meta({ id: 'CreditLimitsSpec' });
export const EnterpriseControlsSpec = EnterpriseControlsBodySchema.meta({ id: 'EnterpriseControlsSpec' });
export const SourceControlIntegrationSpec = CreateIntegrationBody.omit({ token: true })
  .extend({ tokenFrom: SecretRef.optional().meta({ description: 'The token; needed to create the connection, absent keeps the stored one' }) })
  .meta({ id: 'SourceControlIntegrationSpec' });
export const WebhookSpec = CreateWebhookBody.extend({
  enabled: z.boolean().optional().meta({ description: 'Default true' }),
  secretFrom: SecretRef.optional().meta({ description: 'The signing secret (whsec_...) used when the endpoint is created; absent: one is generated' }),
}).meta({ id: 'WebhookSpec' });

/**
 * metadata.name is the automation's name. The settings of POST /automations/ci/edit's `changes`,
 * with `params` as a map (documents are YAML already) and the repositories it is written to.
 */
export const CiAutomationSpec = EditChanges.omit({ name: true, yamlParams: true })
  .extend({
    modeId: EditBody.shape.modeId.unwrap(),
    repositories: z
      .array(EditBody.shape.repos.element.shape.repoFullName)
      .min(1, 'repositories must name at least one owner/name')
      .max(50, 'at most 50 repositories'),
    params: z.partialRecord(z.enum(PARAM_KEYS), z.string()).optional().meta({ description: "Inputs of the generated workflow's agentplane step" }),
  })
  .superRefine((s, ctx) => {
    if (s.modeId !== 'custom') return;
    if (!s.customPrompt) ctx.addIssue({ code: 'custom', path: ['customPrompt'], message: 'the custom mode needs a customPrompt' });
    if (!s.schedule && !s.githubEvents?.length) {
      ctx.addIssue({ code: 'custom', path: ['schedule'], message: 'the custom mode needs a schedule or at least one of githubEvents' });
    }
  })
  .meta({ id: 'CiAutomationSpec', description: 'Its workflow files are written through pull requests after the apply' });

// ---- documents ----

const Metadata = z.strictObject({
  name: z
    .string()
    .min(1, 'metadata.name must not be empty')
    .max(253, 'metadata.name must be at most 253 characters')
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'metadata.name must not contain control characters'),
  labels: z.record(z.string(), z.string()).optional(),
});

/** The envelope every document shares; its spec is checked by its kind. */
export const DocumentEnvelope = z.strictObject({
  apiVersion: z.literal(API_VERSION, `apiVersion must be "${API_VERSION}"`),
  kind: z.string(),
  metadata: Metadata,
  spec: z.unknown(),
});

// ---- plan and apply ----

const ConfigFile = z.strictObject({
  path: z.string().min(1).max(1024).meta({ description: 'The file name errors name, e.g. config/templates.yaml' }),
  content: z.string().max(5_000_000),
});

export const PlanBody = z
  .strictObject({
    files: z.array(ConfigFile).max(5_000).meta({ description: 'YAML files of documents (several per file, separated by ---)' }),
    prune: z.boolean().optional().meta({ description: 'Delete resources config manages (from plan/apply requests) that no document declares any more' }),
  })
  .meta({ id: 'ConfigPlanRequest' });
export type PlanBody = z.infer<typeof PlanBody>;

const FieldChange = z.strictObject({ field: z.string(), old: z.unknown().optional(), new: z.unknown().optional() });

const ChangeSchema = z
  .strictObject({
    kind: z.string(),
    name: z.string().meta({ description: "The document's metadata.name (for a delete: the name it was applied with)" }),
    key: z.string().meta({ description: 'What identifies the object: a name, a provider, an email, a host, a URL' }),
    file: z.string().nullable(),
    action: z.enum(['create', 'update', 'delete', 'unchanged']),
    adopt: z.boolean().meta({ description: 'An existing object config does not manage yet; applying marks it managed' }),
    reverts: z.boolean().optional().meta({ description: 'The document is unchanged: the change puts back values changed outside config (drift fix)' }),
    fields: z.array(FieldChange),
    pending: z.array(z.string()).meta({ description: 'Effects that follow the apply in the background, e.g. a warm pool filling' }),
  })
  .meta({ id: 'ConfigChange' });
export type Change = z.infer<typeof ChangeSchema>;

export const PlanSchema = z
  .strictObject({
    changes: z.array(ChangeSchema),
    summary: z.strictObject({ create: z.number().int(), update: z.number().int(), delete: z.number().int(), unchanged: z.number().int() }),
    hasChanges: z.boolean(),
  })
  .meta({ id: 'ConfigPlan' });
export type Plan = z.infer<typeof PlanSchema>;

export const RevisionSchema = z
  .strictObject({
    id: z.string(),
    number: z.number().int(),
    actor: z.strictObject({ kind: z.enum(['human', 'service']), id: z.string().nullable() }),
    source: z.string().meta({ description: '"api" or the config source id' }),
    commit: z.string().nullable(),
    plan: PlanSchema,
    createdAt: z.number().int(),
  })
  .meta({ id: 'ConfigRevision' });
export type RevisionView = z.infer<typeof RevisionSchema>;

export const ApplyResponse = z
  .strictObject({ plan: PlanSchema, revision: RevisionSchema.nullable().meta({ description: 'null when nothing changed' }) })
  .meta({ id: 'ConfigApplyResult' });
export const RevisionListResponse = z.strictObject({ revisions: z.array(RevisionSchema), pagination: PaginationSchema }).meta({ id: 'ConfigRevisionList' });

export const ExportResponse = z
  .strictObject({ files: z.array(ConfigFile) })
  .meta({ id: 'ConfigExport', description: "The organization's configuration as documents, one file per kind" });

// ---- sources ----

const RepoPath = z
  .string()
  .max(1024)
  .refine((p) => !p.split('/').includes('..') && !p.startsWith('/'), 'path must be a directory inside the repository, without ".." or a leading "/"')
  .meta({ description: 'Directory of the documents inside the repository ("." or "" for the root)' });

export const CreateSourceBody = z
  .strictObject({
    repository: RepoUrl.meta({ description: 'A public URL, or one the organization reaches through its source-control integration' }),
    branch: z.string().min(1).max(255).default('main'),
    path: RepoPath.default('.'),
    intervalSeconds: z
      .int()
      .min(60, 'intervalSeconds must be at least 60 (due sources are looked for every minute)')
      .max(86_400, 'intervalSeconds must be at most 86400')
      .default(180),
    prune: z.boolean().default(false).meta({ description: 'Delete objects this source manages once no document declares them' }),
    drift: z.enum(['warn', 'fix']).default('warn').meta({ description: 'warn: report changes made outside config; fix: put the declared values back' }),
    integrationId: z.string().min(1).optional().meta({ description: 'The source-control integration the repository is cloned through' }),
  })
  .meta({ id: 'CreateConfigSourceRequest' });
export type CreateSourceBody = z.infer<typeof CreateSourceBody>;

export const SourceIdParams = z.object({ sourceId: z.string().min(1) });

const DriftSchema = z.strictObject({ kind: z.string(), name: z.string(), key: z.string(), field: z.string(), declared: z.unknown(), actual: z.unknown() });
export type Drift = z.infer<typeof DriftSchema>;

export const SourceSchema = z
  .strictObject({
    id: z.string(),
    repository: z.string(),
    branch: z.string(),
    path: z.string(),
    intervalSeconds: z.number().int(),
    prune: z.boolean(),
    drift: z.enum(['warn', 'fix']),
    integrationId: z.string().nullable(),
    webhookUrl: z.string().meta({ description: "Where the forge's push webhook goes (Gitea: X-Gitea-Signature; GitHub: X-Hub-Signature-256)" }),
    status: z.strictObject({
      lastAppliedCommit: z.string().nullable().meta({ description: 'The commit whose documents are in force' }),
      lastCommit: z.string().nullable().meta({ description: 'The commit the last attempt read' }),
      lastAttemptAt: z.number().int().nullable(),
      lastResult: z
        .strictObject({
          ok: z.boolean(),
          message: z.string(),
          revision: z.number().int().nullable(),
          problems: z.array(z.unknown()).optional(),
        })
        .nullable(),
      drift: z.array(DriftSchema).meta({ description: 'Managed objects changed outside config: the field, its declared and its actual value' }),
    }),
    createdAt: z.number().int(),
  })
  .meta({ id: 'ConfigSource' });
export type SourceView = z.infer<typeof SourceSchema>;

export const CreatedSourceSchema = SourceSchema.extend({
  webhookSecret: z.string().meta({ description: "The push webhook's secret, shown only in this response: set it on the forge's webhook" }),
}).meta({ id: 'CreatedConfigSource' });
export const SourceListResponse = z.strictObject({ sources: z.array(SourceSchema) }).meta({ id: 'ConfigSourceList' });

// ---- managed objects ----

const ManagedSchema = z
  .strictObject({
    kind: z.string(),
    key: z.string().meta({ description: 'What identifies the object: a name, a provider, an email, a host, a URL' }),
    name: z.string().meta({ description: "The document's metadata.name" }),
    resourceId: z.string().meta({ description: "The object's id (a provider, an email or the kind for settings without one)" }),
    file: z.string().nullable(),
    source: z.strictObject({
      id: z.string().meta({ description: '"api" (plan/apply requests) or the config source id' }),
      repository: z.string().nullable(),
      branch: z.string().nullable(),
      path: z.string().nullable(),
    }),
  })
  .meta({ id: 'ConfigManagedResource' });
export type ManagedView = z.infer<typeof ManagedSchema>;
export const ManagedListResponse = z.strictObject({ resources: z.array(ManagedSchema) }).meta({ id: 'ConfigManagedResources' });
