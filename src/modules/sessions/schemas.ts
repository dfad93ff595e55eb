import { z } from 'zod';
import { PageQuerySchema, PaginationSchema } from '../../http/pagination.ts';

const REASONING_EFFORTS = ['none', 'dynamic', 'off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export const INTERACTION_MODES = ['auto', 'spec', 'agi', 'mission'] as const;
export const AUTONOMY_LEVELS = ['off', 'low', 'medium', 'high'] as const;
/** Deprecated: interactionMode + autonomyLevel replace it; both directions are mapped in settings.ts. */
export const AUTONOMY_MODES = ['normal', 'spec', 'auto-low', 'auto-medium', 'auto-high'] as const;
const SESSION_STATUSES = ['idle', 'pending', 'running'] as const;
const MESSAGE_ROLES = ['user', 'assistant', 'tool', 'system'] as const;
const MODEL_PROVIDERS = ['anthropic', 'openai', 'generic-chat-completion-api', 'factory', 'google', 'xai', 'voyage', 'bedrock-converse'] as const;
const API_PROVIDERS = [
  'bedrock',
  'anthropic',
  'vertex_anthropic',
  'bedrock_anthropic',
  'bedrock_converse',
  'openai',
  'azure_openai',
  'google',
  'xai',
  'fireworks',
  'baseten',
  'snowflake',
] as const;

const SessionStatusSchema = z.enum(SESSION_STATUSES).meta({ description: 'Current session execution status' });

const nonBlank = (what: string, max = 200) =>
  z
    .string(`${what} must be a string`)
    .min(1, `${what} must not be empty`)
    .max(max, `${what} must be at most ${max} characters`)
    .regex(/\S/, `${what} must not be blank`);

const TagSchema = z.strictObject({
  name: nonBlank('tag name', 100),
  metadata: z.record(z.string(), z.string()).optional(),
});

const toolIds = (what: string) => z.array(nonBlank(`${what} entry`), `${what} must be an array of strings`).max(200, `${what} may hold at most 200 ids`);

/** What a caller may set; the usage fields of the response are computed and ignored on input. */
export const SessionSettingsInputSchema = z
  .object({
    model: nonBlank('sessionSettings.model').optional(),
    reasoningEffort: z.enum(REASONING_EFFORTS).optional(),
    interactionMode: z.enum(INTERACTION_MODES).optional(),
    autonomyLevel: z.enum(AUTONOMY_LEVELS).optional(),
    autonomyMode: z.enum(AUTONOMY_MODES).optional(),
    specModeModel: nonBlank('sessionSettings.specModeModel').optional(),
    specModeReasoningEffort: z.enum(REASONING_EFFORTS).optional(),
    runInWorktree: z.boolean().optional(),
    providerLock: z.enum(MODEL_PROVIDERS).optional(),
    providerLockTimestamp: z.string().optional(),
    apiProviderLock: z.enum(API_PROVIDERS).optional(),
    compactionModel: nonBlank('sessionSettings.compactionModel').optional(),
    compactionThresholdCheckEnabled: z.boolean().optional(),
    agentsMdEnabled: z.boolean().optional().meta({
      description: "Read the working directory's AGENTS.md (and its parents' up to the repository root) into the agent's instructions; default true",
    }),
    tags: z.array(TagSchema).max(50, 'at most 50 tags').optional(),
    enabledToolIds: toolIds('enabledToolIds').optional(),
    disabledToolIds: toolIds('disabledToolIds').optional(),
    archivedAt: z.iso.datetime({ offset: true, message: 'archivedAt must be an ISO-8601 date-time' }).nullable().optional().meta({
      description: 'Presence archives the session; null unarchives it',
    }),
  })
  .meta({ id: 'SessionSettingsInput' });
export type SessionSettingsInput = z.infer<typeof SessionSettingsInputSchema>;

const count = z.number().nonnegative();
const TokenUsageSchema = z
  .strictObject({
    inputTokens: count,
    outputTokens: count,
    cacheCreationTokens: count,
    cacheReadTokens: count,
    thinkingTokens: count,
    serviceCredits: count.optional(),
  })
  .meta({ id: 'TokenUsage' });
export type TokenUsage = z.infer<typeof TokenUsageSchema>;

const SessionSettingsSchema = z
  .strictObject({
    model: z.string().optional(),
    reasoningEffort: z.enum(REASONING_EFFORTS).optional(),
    interactionMode: z.enum(INTERACTION_MODES).optional(),
    autonomyLevel: z.enum(AUTONOMY_LEVELS).optional(),
    autonomyMode: z.enum(AUTONOMY_MODES).optional(),
    specModeModel: z.string().optional(),
    specModeReasoningEffort: z.enum(REASONING_EFFORTS).optional(),
    runInWorktree: z.boolean().optional(),
    providerLock: z.enum(MODEL_PROVIDERS).optional(),
    providerLockTimestamp: z.string().optional(),
    apiProviderLock: z.enum(API_PROVIDERS).optional(),
    compactionModel: z.string().optional(),
    compactionThresholdCheckEnabled: z.boolean().optional(),
    agentsMdEnabled: z.boolean().optional(),
    assistantActiveTimeMs: z.number().optional(),
    tokenUsage: TokenUsageSchema.optional(),
    inclusiveTokenUsage: TokenUsageSchema.optional(),
    childInclusiveTokenUsageBySessionId: z.record(z.string(), TokenUsageSchema).optional(),
    archivedAt: z.string().optional(),
    tags: z.array(TagSchema).optional(),
    enabledToolIds: z.array(z.string()).optional(),
    disabledToolIds: z.array(z.string()).optional(),
  })
  .meta({ id: 'SessionSettings' });

const PendingApprovalSchema = z
  .strictObject({
    toolUseId: z.string().meta({ description: 'The tool call (tool_use block id) waiting for a decision' }),
    toolName: z.string(),
    input: z.record(z.string(), z.unknown()).meta({ description: 'The tool call input as the model wrote it' }),
    requestedAt: z.number().int().meta({ description: 'Unix ms' }),
    expiresAt: z.number().int().meta({ description: 'Unix ms: unanswered by then, the call is not run and the model is told so' }),
  })
  .meta({ id: 'PendingApproval' });
export type PendingApprovalView = z.infer<typeof PendingApprovalSchema>;

export const SessionSchema = z
  .strictObject({
    sessionId: z.string(),
    title: z.string().optional(),
    status: SessionStatusSchema,
    messageCount: z.number().int(),
    createdAt: z.number().int().meta({ description: 'Unix ms' }),
    updatedAt: z.number().int().meta({ description: 'Unix ms' }),
    completedAt: z.number().int().optional().meta({ description: 'Unix ms: when the last turn ended' }),
    computerId: z.string().optional(),
    cwd: z.string().optional().meta({ description: 'Working directory on the computer' }),
    sessionSettings: SessionSettingsSchema.optional(),
    serviceCredits: z.number().meta({ description: 'Credits consumed by the session and its subagents' }),
    parent_session_id: z.string().optional().meta({ description: 'Set for subagent sessions' }),
    pendingApprovals: z
      .array(PendingApprovalSchema)
      .optional()
      .meta({ description: 'Tool calls the paused turn waits on (status pending); answer each with POST .../approvals/{toolUseId}' }),
  })
  .meta({ id: 'Session' });
export type SessionView = z.infer<typeof SessionSchema>;

export const SessionListResponse = z.strictObject({ sessions: z.array(SessionSchema), pagination: PaginationSchema });

const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;
const base64 = (what: string) =>
  z
    .string()
    .min(1, `${what} must not be empty`)
    .regex(/^[A-Za-z0-9+/\s]*={0,2}\s*$/, `${what} must be base64`);

const ImageSourceSchema = z.strictObject({
  type: z.literal('base64'),
  data: base64('image data'),
  mediaType: z.enum(IMAGE_TYPES, `mediaType must be one of ${IMAGE_TYPES.join(', ')}`),
});
const DocumentSourceSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('base64'),
    mediaType: z.literal('application/pdf', 'a base64 file must have mediaType application/pdf'),
    data: base64('file data'),
    parsedData: z.string().optional(),
    name: z.string().optional(),
    path: z.string().optional(),
  }),
  z.strictObject({
    type: z.literal('text'),
    mediaType: z.literal('text/plain', 'a text file must have mediaType text/plain'),
    data: z.string(),
    name: z.string().optional(),
    mime: z.string().optional(),
  }),
]);

const blockId = { id: z.string().optional(), cache_control: z.strictObject({ type: z.literal('ephemeral') }).optional() };
const TextBlock = z.strictObject({ ...blockId, type: z.literal('text'), text: z.string() });
const ImageBlock = z.strictObject({ ...blockId, type: z.literal('image'), source: ImageSourceSchema });
const DocumentBlock = z.strictObject({ ...blockId, type: z.literal('document'), source: DocumentSourceSchema });

/** The seven content kinds of a message (wire 1.7). */
const ContentBlockSchema = z
  .discriminatedUnion('type', [
    TextBlock,
    ImageBlock,
    z.strictObject({
      ...blockId,
      type: z.literal('thinking'),
      thinking: z.string(),
      signature: z.string(),
      signatureProvider: z.enum([...MODEL_PROVIDERS, 'unknown']).optional(),
      durationMs: z.number().nonnegative().optional(),
    }),
    z.strictObject({ ...blockId, type: z.literal('redacted_thinking'), data: z.string() }),
    z.strictObject({
      cache_control: blockId.cache_control,
      type: z.literal('tool_use'),
      id: z.string().min(1),
      name: z.string().min(1),
      input: z.record(z.string(), z.unknown()),
      thoughtSignature: z.string().optional(),
    }),
    z.strictObject({
      ...blockId,
      type: z.literal('tool_result'),
      toolUseId: z.string().min(1),
      content: z.union([z.string(), z.array(z.discriminatedUnion('type', [TextBlock, ImageBlock, DocumentBlock]))]).optional(),
      isError: z.boolean().optional(),
    }),
    DocumentBlock,
  ])
  .meta({ id: 'ContentBlock' });
export type ContentBlock = z.infer<typeof ContentBlockSchema>;

/**
 * Marks a `system` message that summarises earlier messages to keep the model's context inside
 * its window: the model is sent this summary instead of the messages it replaces, which stay in
 * the history.
 */
const CompactionMarkerSchema = z
  .strictObject({
    fromSeq: z.number().int().meta({ description: 'seq of the first message replaced' }),
    toSeq: z.number().int().meta({ description: 'seq of the last message replaced; later messages are sent as they are' }),
    tokensBefore: z.number().int().meta({ description: 'Estimated input tokens of the context before the compaction' }),
    tokensAfter: z.number().int().meta({ description: 'Estimated input tokens of the context after it' }),
  })
  .meta({ id: 'CompactionMarker' });
export type CompactionMarker = z.infer<typeof CompactionMarkerSchema>;

export const MessageSchema = z
  .strictObject({
    id: z.string(),
    role: z.enum(MESSAGE_ROLES),
    content: z.array(ContentBlockSchema),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
    parentId: z.string().optional(),
    userMessageSource: z.string().optional(),
    visibility: z.enum(['both', 'llm_only', 'user_only']).optional(),
    openaiMessageId: z.string().optional(),
    openaiPhase: z.enum(['commentary', 'final_answer']).nullable().optional(),
    openaiEncryptedContent: z.string().optional(),
    openaiReasoningId: z.string().optional(),
    openaiReasoningSummary: z.string().optional(),
    chatCompletionReasoningField: z.enum(['reasoning', 'reasoning_content']).optional(),
    chatCompletionReasoningContent: z.string().optional(),
    isError: z.boolean().optional(),
    modelId: z.string().optional(),
    reasoningEffort: z.enum(REASONING_EFFORTS).optional(),
    seq: z.number().int().optional(),
    compaction: CompactionMarkerSchema.optional(),
  })
  .meta({ id: 'Message' });
export type MessageView = z.infer<typeof MessageSchema>;
/** Optional wire fields kept in the message row's `extra` column. */
export const MESSAGE_EXTRA_FIELDS = [
  'visibility',
  'openaiMessageId',
  'openaiPhase',
  'openaiEncryptedContent',
  'openaiReasoningId',
  'openaiReasoningSummary',
  'chatCompletionReasoningField',
  'chatCompletionReasoningContent',
  'compaction',
] as const;

export const MessageListResponse = z.strictObject({ messages: z.array(MessageSchema), pagination: PaginationSchema });

export const SessionIdParams = z.object({ sessionId: z.string().min(1).meta({ description: 'Session ID' }) });
export const MessageIdParams = SessionIdParams.extend({ messageId: z.string().min(1).meta({ description: 'Message ID' }) });
export const ComputerQuery = z.object({
  computerId: z.string().min(1).optional().meta({ description: 'Computer ID to query directly' }),
});
export const SessionListQuery = PageQuerySchema.extend(ComputerQuery.shape);
export const MessageListQuery = PageQuerySchema.extend({
  ...ComputerQuery.shape,
  role: z.enum(['user', 'assistant', 'tool'], 'role must be one of user, assistant, tool').optional().meta({ description: 'Filter messages by role' }),
});

export const CreateSessionBody = z.strictObject({
  computerId: nonBlank('computerId').meta({
    description: 'The computer the session runs on: its id, or the name of one of your own computers (the session stores the id)',
  }),
  cwd: z
    .string('cwd must be a string')
    .min(1, 'cwd must not be empty')
    .max(4096, 'cwd must be at most 4096 characters')
    .regex(/^\//, 'cwd must be an absolute path (start with /)')
    .regex(/^[^\u0000]*$/, 'cwd must not contain NUL characters')
    .optional()
    .meta({ description: "Working directory on the computer; default: the remote user's home directory" }),
  sessionSettings: SessionSettingsInputSchema.optional(),
});
export type CreateSessionInput = z.infer<typeof CreateSessionBody>;

export const UpdateSessionBody = z.object({
  sessionSettings: SessionSettingsInputSchema.meta({ description: 'Fields to change; computed usage fields are ignored' }),
});

const MAX_WAIT_MS = 600_000;
export const DEFAULT_WAIT_MS = 60_000;
export const PostMessageBody = z.strictObject({
  text: z.string('text is required and must be a string').min(1, 'text must not be empty').max(1_000_000, 'text must be at most 1,000,000 characters'),
  images: z.array(ImageSourceSchema).max(20, 'at most 20 images per message').optional(),
  files: z.array(DocumentSourceSchema).max(20, 'at most 20 files per message').optional(),
  computerId: nonBlank('computerId').optional().meta({ description: "Route to this computer; falls back to the session's computerId" }),
  waitForCompletion: z.boolean().optional().meta({ description: 'Answer only when the agent is idle again' }),
  waitTimeoutMs: z
    .int('waitTimeoutMs must be an integer')
    .min(1, 'waitTimeoutMs must be at least 1')
    .max(MAX_WAIT_MS, `waitTimeoutMs must be at most ${MAX_WAIT_MS}`)
    .optional()
    .meta({ description: `How long to wait with waitForCompletion (default ${DEFAULT_WAIT_MS}); past it: 504, the turn continues` }),
});
export type PostMessageInput = z.infer<typeof PostMessageBody>;
export const PostMessageResponse = z.strictObject({
  messageId: z.string().meta({ description: 'ID of the created user message' }),
  status: SessionStatusSchema.meta({ description: 'Agent status after message submission' }),
});
export const InterruptResponse = z.strictObject({ status: SessionStatusSchema });

export const ApprovalParams = SessionIdParams.extend({ toolUseId: z.string().min(1).meta({ description: 'The tool call waiting for approval' }) });
export const ApprovalBody = z.strictObject({
  decision: z.enum(['approve', 'deny'], 'decision must be "approve" or "deny"'),
  scope: z.enum(['once', 'session'], 'scope must be "once" or "session"').default('once').meta({
    description:
      'session: also decide every later call like it in this session without asking (the same command line for run_command, the same path for write_file and edit_file, the same input for other tools)',
  }),
});
export const ApprovalResponse = z
  .strictObject({
    toolUseId: z.string(),
    toolName: z.string(),
    status: z.enum(['approved', 'denied']),
    scope: z.enum(['once', 'session']),
    decidedAt: z.number().int().meta({ description: 'Unix ms' }),
    sessionStatus: SessionStatusSchema.meta({ description: 'The session status right after the decision (the resumed turn starts on a worker shortly after)' }),
  })
  .meta({ id: 'ApprovalDecision' });

const nonNegInt = (what: string) => z.int(`${what} must be an integer`).nonnegative(`${what} must not be negative`);
const CheckpointEntrySchema = z.object({
  file: z.string().min(1, 'entries[].file must not be empty'),
  blob_sha: z.string().optional(),
  attributions: z.array(z.object({ start: z.number(), end: z.number(), author_id: z.string(), ts: z.number() })).optional(),
  line_attributions: z.array(z.object({ start_line: z.number(), end_line: z.number(), author_id: z.string(), overrode: z.unknown().optional() })).optional(),
});
const CheckpointSchema = z.object({
  kind: nonBlank('checkpoints[].kind', 100).meta({ description: 'e.g. AiAgent' }),
  diff: z.string().optional(),
  author: z.string().optional(),
  timestamp: z.number().optional(),
  api_version: z.string().optional(),
  git_ai_version: z.string().optional(),
  entries: z.array(CheckpointEntrySchema).max(10_000).default([]),
  agent_id: z.object({ tool: z.string().optional(), id: z.string().optional(), model: z.string().optional() }).optional(),
  agent_metadata: z.object({ transcript_path: z.string().optional(), settings_path: z.string().optional(), tool_name: z.string().optional() }).optional(),
  line_stats: z
    .object({
      additions: nonNegInt('line_stats.additions'),
      deletions: nonNegInt('line_stats.deletions'),
      additions_sloc: nonNegInt('line_stats.additions_sloc').default(0),
      deletions_sloc: nonNegInt('line_stats.deletions_sloc').default(0),
    })
    .optional(),
});
const sha = (what: string) => z.string().regex(/^[0-9a-f]{7,64}$/i, `${what} must be a hex commit id`);
export const CheckpointsBody = z.object({
  commitSha: sha('commitSha'),
  baseSha: sha('baseSha').optional(),
  branch: z.string().max(1000).optional(),
  isDefaultBranch: z.boolean().optional(),
  repoUrl: z.string().max(2000).optional(),
  repoName: z.string().max(1000).optional(),
  agentVersion: z.string().max(200).optional(),
  checkpoints: z.array(CheckpointSchema).min(1, 'checkpoints must hold at least one checkpoint').max(1000, 'at most 1000 checkpoints per request'),
});
export type CheckpointsInput = z.infer<typeof CheckpointsBody>;
export const CheckpointsResponse = z.strictObject({ checkpointIds: z.array(z.string()) });
