import { z } from 'zod';
import { LimitParamSchema, PageQuerySchema, PaginationSchema } from '../../http/pagination.ts';
import { repoKey, scratchCloneProblem } from '../../repos/policy.ts';
import { MAX_PAGE_BYTES, MAX_PAGES } from './page.ts';

const ms = z.number().int().meta({ description: 'Unix milliseconds' });

const PRIVACY_LEVELS = ['private', 'organization', 'public'] as const;
const PrivacySchema = z.enum(PRIVACY_LEVELS, { error: `must be one of ${PRIVACY_LEVELS.join(', ')}` }).meta({
  description: 'private: its creator, managers and owners; organization: every member; public: also anyone with its public link',
});
const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;

const repoUrl = z
  .string()
  .trim()
  .max(2048)
  .refine((v) => repoKey(v) !== undefined, 'must be a repository URL, e.g. https://github.com/acme/app')
  .meta({ example: 'https://github.com/acme/app' });

const pagePath = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]*(\/[a-z0-9][a-z0-9_-]*)?$/,
    'must be one or two lower-case slugs (letters, digits, "-", "_") joined by "/", e.g. overview/architecture',
  );

const SourceInputSchema = z.strictObject({
  path: z.string().min(1).max(1000),
  blobSha: z
    .string()
    .regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, 'must be a git object id')
    .optional(),
  lines: z
    .array(z.tuple([z.number().int().min(1), z.number().int().min(1)]))
    .max(100)
    .optional(),
});

const PageInputSchema = z.strictObject({
  path: pagePath,
  title: z.string().trim().min(1, 'must not be empty').max(300),
  markdown: z.string().refine((m) => Buffer.byteLength(m) <= MAX_PAGE_BYTES, `must be at most ${MAX_PAGE_BYTES} bytes`),
  order: z.number().int().min(0).optional().meta({ description: 'Position among its siblings; default the order sent' }),
  sources: z.array(SourceInputSchema).max(500).optional(),
});

export const CreateRunBodySchema = z
  .strictObject({
    repoUrl,
    branch: z.string().min(1).max(500).nullable().optional(),
    commitHash: z
      .string()
      .regex(/^[0-9a-f]{7,64}$/, 'must be a hexadecimal commit hash')
      .nullable()
      .optional(),
    hasLocalChanges: z.boolean().nullable().optional(),
    agentVersion: z.string().min(1).max(200).nullable().optional(),
    privacy: PrivacySchema.optional().meta({ description: 'Default organization' }),
    pages: z
      .array(PageInputSchema)
      .min(1, 'must hold at least one page; leave pages out to have agentplane generate the wiki')
      .max(MAX_PAGES, `at most ${MAX_PAGES} pages`)
      .optional()
      .meta({ description: 'Upload: the pages of a wiki generated elsewhere. Without pages agentplane generates the wiki.' }),
    computerId: z.string().min(1).max(200).optional().meta({ description: 'Generate: clone on this computer over SSH instead of on the control plane' }),
    model: z.string().min(1).max(200).optional().meta({ description: 'Generate: a model of the models file or custom:<id> writes the prose of each page' }),
  })
  .refine((b) => !b.pages || (b.computerId === undefined && b.model === undefined), {
    message: 'computerId and model apply to generated runs; an upload brings its pages',
    path: ['pages'],
  })
  .refine((b) => b.pages || scratchCloneProblem(b.repoUrl) === undefined, {
    message: 'cannot be cloned: use an https, http, ssh or git URL',
    path: ['repoUrl'],
  })
  .meta({ id: 'WikiRunCreate' });
export type CreateRunBody = z.infer<typeof CreateRunBodySchema>;

const TokenUsageSchema = z.strictObject({
  inputTokens: z.number(),
  outputTokens: z.number(),
  cacheCreationTokens: z.number(),
  cacheReadTokens: z.number(),
  thinkingTokens: z.number(),
  serviceCredits: z.number(),
});

export const WikiRunSchema = z
  .strictObject({
    wikiRunId: z.uuid(),
    repoUrl: z.string(),
    branch: z.string().nullable(),
    commitHash: z.string().nullable(),
    hasLocalChanges: z.boolean().nullable(),
    agentVersion: z.string().nullable(),
    source: z.enum(['upload', 'generate']),
    status: z.enum(RUN_STATUSES),
    error: z.string().nullable(),
    computerId: z.string().nullable(),
    model: z.string().nullable(),
    privacy: PrivacySchema,
    publicUrl: z.string().nullable().meta({ description: 'Set while privacy is public: the link that reads the run without credentials' }),
    pageCount: z.number().int(),
    pagesReused: z.number().int(),
    pagesGenerated: z.number().int(),
    baseRunId: z.uuid().nullable().meta({ description: 'The run an incremental generation reused pages from' }),
    tokenUsage: TokenUsageSchema.nullable(),
    hasVideo: z.boolean(),
    createdBy: z.strictObject({ kind: z.enum(['user', 'service_account']), id: z.string() }),
    createdAt: ms,
    startedAt: ms.nullable(),
    completedAt: ms.nullable(),
  })
  .meta({ id: 'WikiRun' });
export type WikiRun = z.infer<typeof WikiRunSchema>;

const PageTreeItemSchema = z
  .strictObject({ pageId: z.string(), title: z.string(), path: z.string(), parentId: z.string().nullable(), order: z.number().int() })
  .meta({ id: 'WikiPageTreeItem' });

export const WikiRunDetailSchema = WikiRunSchema.extend({ pages: z.array(PageTreeItemSchema) }).meta({ id: 'WikiRunDetail' });

export const WikiRunListSchema = z.strictObject({ wikiRuns: z.array(WikiRunSchema), pagination: PaginationSchema }).meta({ id: 'WikiRunList' });
export const WikiHistorySchema = z
  .strictObject({ repoUrl: z.string(), wikiRuns: z.array(WikiRunSchema), pagination: PaginationSchema })
  .meta({ id: 'WikiRunHistory' });

export const ListQuerySchema = PageQuerySchema;

export const RunParamsSchema = z.strictObject({ wikiRunId: z.string() });
export const PageParamsSchema = z.strictObject({ wikiRunId: z.string(), pageId: z.string() });
export const HistoryParamsSchema = z.strictObject({ repoUrl: z.string().min(1) });

/** Anonymous reads of a public run carry its link's token. */
export const PublicReadQuerySchema = z.strictObject({
  publicToken: z.string().min(1).max(100).optional().meta({ description: "The token of a public run's link, for reads without credentials" }),
});

export const WikiPageSchema = z
  .strictObject({
    pageId: z.string(),
    wikiRunId: z.uuid(),
    title: z.string(),
    path: z.string(),
    parentId: z.string().nullable(),
    order: z.number().int(),
    markdown: z.string(),
    sources: z.array(z.strictObject({ path: z.string(), blobSha: z.string().nullable(), lines: z.array(z.tuple([z.number(), z.number()])) })),
    linksOut: z.array(z.strictObject({ pageId: z.string(), title: z.string(), path: z.string() })),
    linksIn: z.array(z.strictObject({ pageId: z.string(), title: z.string(), path: z.string() })),
    reused: z.boolean().meta({ description: 'Carried over unchanged from the run named by baseRunId' }),
    degraded: z.string().nullable().meta({ description: 'Why the model did not write this page (the survey version stands in)' }),
  })
  .meta({ id: 'WikiPage' });

export const PrivacyBodySchema = z.strictObject({ privacy: PrivacySchema }).meta({ id: 'WikiPrivacyUpdate' });

export const SearchQuerySchema = PublicReadQuerySchema.extend({
  q: z.string().trim().min(1, 'must not be empty: pass words to search for').max(500),
  limit: LimitParamSchema.pipe(z.number().max(50, 'must be at most 50')).meta({ description: 'Hits to return (1-50, default 20)' }),
});
export type SearchQuery = z.infer<typeof SearchQuerySchema>;

export const SearchResultSchema = z
  .strictObject({
    wikiRunId: z.uuid(),
    query: z.string(),
    results: z.array(
      z.strictObject({
        pageId: z.string(),
        title: z.string(),
        path: z.string(),
        snippet: z.string().meta({ description: 'HTML: the page text escaped, matches in <mark>' }),
        rank: z.number(),
        definesSymbol: z.boolean().meta({ description: 'The page defines a symbol the query names' }),
      }),
    ),
  })
  .meta({ id: 'WikiSearchResult' });

export const VIDEO_CONTENT_TYPES = ['video/mp4', 'video/webm', 'video/quicktime'] as const;
export const VideoUploadBodySchema = z
  .strictObject({
    wikiRunId: z.uuid(),
    contentType: z.enum(VIDEO_CONTENT_TYPES, { error: `must be one of ${VIDEO_CONTENT_TYPES.join(', ')}` }),
    sizeBytes: z.number().int().min(1),
  })
  .meta({ id: 'WikiVideoUploadRequest' });
export type VideoUploadBody = z.infer<typeof VideoUploadBodySchema>;

export const VideoUploadUrlSchema = z
  .strictObject({
    uploadUrl: z.string(),
    method: z.literal('PUT'),
    headers: z.record(z.string(), z.string()).meta({ description: 'Headers the upload must send' }),
    expiresAt: ms,
    maxBytes: z.number().int(),
    storage: z.enum(['data-directory', 's3']),
  })
  .meta({ id: 'WikiVideoUploadUrl' });
