import { z } from 'zod';
import { LimitParamSchema } from '../../http/pagination.ts';
import { AUTONOMY_LEVELS, BY_USER_TOP, CLIENTS, MODEL_TIERS } from './metrics.ts';
import { isCalendarDate } from './dates.ts';

const date = (what: string) =>
  z
    .string({ error: `is required: the ${what} day, YYYY-MM-DD (UTC)` })
    .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date in YYYY-MM-DD format (UTC), e.g. 2026-03-01')
    .refine(isCalendarDate, 'is not a real calendar date; use YYYY-MM-DD (UTC), e.g. 2026-03-01')
    .meta({ description: `${what} day, YYYY-MM-DD (UTC), inclusive`, param: { example: '2026-01-14' } });

const range = { startDate: date('First'), endDate: date('Last') };

const groupBy = <V extends string>(value: V) =>
  z
    .enum([value] as [V], { error: `must be "${value}" or absent` })
    .optional()
    .meta({ description: `Flatten the nested breakdown into one row per ${value} and day` });

export const TokensQuerySchema = z.object({ ...range, group_by: groupBy('model') });
export const ToolsQuerySchema = z.object({ ...range, group_by: groupBy('tool_name') });
export const ActivityQuerySchema = z.object({ ...range, group_by: groupBy('client') });
export const ProductivityQuerySchema = z.object({ ...range });
export const UsersQuerySchema = z.object({
  ...range,
  limit: LimitParamSchema.meta({ description: 'Users per page (1-100, default 20)', param: { example: '20' } }),
  cursor: z.string().min(1).max(200).optional().meta({ description: 'A user id taken from meta.next_cursor: the page starts after it' }),
});
export type RangeQuery = z.infer<typeof ProductivityQuerySchema>;
export type UsersQuery = z.infer<typeof UsersQuerySchema>;

const day = z.string().meta({ description: 'UTC day, YYYY-MM-DD' });
const n = z.number();

const MetaSchema = z.strictObject({ org_id: z.string(), start_date: day, end_date: day }).meta({ id: 'AnalyticsMeta' });
const PagedMetaSchema = MetaSchema.extend({
  has_more: z.boolean(),
  next_cursor: z.string().nullable().meta({ description: 'Pass as cursor for the next page; null on the last page' }),
}).meta({ id: 'AnalyticsPagedMeta' });

const envelope = <T extends z.ZodType>(row: T, id: string, meta: z.ZodType = MetaSchema) => z.strictObject({ data: z.array(row), meta }).meta({ id });

const ModelBreakdownSchema = z
  .strictObject({ model_id: z.string(), model_tier: z.enum(MODEL_TIERS), billable_tokens: n, input_tokens: n, output_tokens: n })
  .meta({ id: 'ModelBreakdown' });
const UserTokenBreakdownSchema = z
  .strictObject({ user_id: z.string(), user_email: z.string().nullable(), billable_tokens: n, by_model: z.array(ModelBreakdownSchema) })
  .meta({ id: 'UserTokenBreakdown' });

const TokensRowSchema = z.strictObject({
  date: day,
  billable_tokens: n.meta({ description: 'Standard credits: input + output + cache writes + cache reads / 10 (rounded per user and model)' }),
  input_tokens: n,
  output_tokens: n,
  cache_read_tokens: n,
  cache_write_tokens: n,
  by_model: z.array(ModelBreakdownSchema),
  by_user: z.array(UserTokenBreakdownSchema).meta({
    description: `The day's ${BY_USER_TOP} largest users by billable tokens, largest first; /users has every user`,
  }),
});
const TokensGroupRowSchema = z.strictObject({ date: day, group_key: z.string(), billable_tokens: n, input_tokens: n, output_tokens: n });
export const TokensResponseSchema = envelope(z.union([TokensRowSchema, TokensGroupRowSchema]), 'AnalyticsTokens');

const ToolsRowSchema = z.strictObject({
  date: day,
  tool_calls: n,
  by_tool: z.array(z.strictObject({ tool: z.string(), invocations: n })),
  mcp_users_with_mcp: n,
  mcp_by_server: z.array(z.strictObject({ server: z.string(), invocations: n })),
  skills_invocations: n,
  skills_by_name: z.array(z.strictObject({ name: z.string(), count: n })),
  slash_commands_invocations: n,
  slash_commands_by_name: z.array(z.strictObject({ name: z.string(), count: n })),
  hooks_invocations: n,
  hooks_by_event: z.array(z.strictObject({ event: z.string(), matcher: z.string(), command: z.string(), count: n })),
  web_users: n,
  autonomy_ratio_avg: n.meta({ description: 'Mean over users with a user turn that day of tool calls per user turn' }),
  autonomy_ratio_p50: n,
  autonomy_ratio_p90: n,
  tool_calls_per_session_avg: n,
  user_turns_per_session_avg: n,
  tool_autonomy_level_ratio: z.strictObject({ auto_high: n, auto_medium: n, auto_low: n, manual: n }),
});
const ToolsGroupRowSchema = z.strictObject({ date: day, group_key: z.string(), tool_calls: n });
export const ToolsResponseSchema = envelope(z.union([ToolsRowSchema, ToolsGroupRowSchema]), 'AnalyticsTools');

const ActivityRowSchema = z.strictObject({
  date: day,
  daily_active_users: n,
  weekly_active_users: n.meta({ description: 'Distinct users active in the 7 days ending on date' }),
  monthly_active_users: n.meta({ description: 'Distinct users active in the 30 days ending on date' }),
  daily_active_users_by_client: z.strictObject({ 'terminal-ui': n, web: n, 'non-interactive-cli': n }),
  sessions: n,
  messages: n,
  user_messages: n,
});
const ActivityGroupRowSchema = z.strictObject({ date: day, group_key: z.enum(CLIENTS), daily_active_users: n });
export const ActivityResponseSchema = envelope(z.union([ActivityRowSchema, ActivityGroupRowSchema]), 'AnalyticsActivity');

const ProductivityRowSchema = z.strictObject({
  date: day,
  files_created: n,
  files_edited: n,
  by_extension: z.array(z.strictObject({ extension: z.string(), count: n })),
  by_language: z.array(z.strictObject({ language: z.string(), count: n })),
  git_commits: n,
  git_prs_created: n,
});
export const ProductivityResponseSchema = envelope(ProductivityRowSchema, 'AnalyticsProductivity');

const UserRowSchema = z.strictObject({
  user_id: z.string(),
  user_email: z.string().nullable(),
  date: day,
  tool_calls: n,
  billable_tokens: n,
  primary_model: z.string(),
  primary_model_tier: z.enum(MODEL_TIERS),
  files_created: n,
  files_edited: n,
  git_commits: n,
  git_prs_created: n,
  mcp_calls: n,
  skill_calls: n,
  slash_commands: n,
  hooks: n,
  sessions: n,
  messages: n,
  user_messages: n,
  assistant_messages: n,
  autonomy_ratio: n,
  delegation_level: z.enum(AUTONOMY_LEVELS),
  languages: z.array(z.string()),
});
export const UsersResponseSchema = envelope(UserRowSchema, 'AnalyticsUsers', PagedMetaSchema);

export type TokensResponse = z.infer<typeof TokensResponseSchema>;
export type ToolsResponse = z.infer<typeof ToolsResponseSchema>;
export type ActivityResponse = z.infer<typeof ActivityResponseSchema>;
export type ProductivityResponse = z.infer<typeof ProductivityResponseSchema>;
export type UsersResponse = z.infer<typeof UsersResponseSchema>;
export type AnalyticsMeta = z.infer<typeof MetaSchema>;
export type AnalyticsPagedMeta = z.infer<typeof PagedMetaSchema>;

// The row shapes, for the roll-up that renders them once and the service that serves them as text.
export type TokensRow = z.infer<typeof TokensRowSchema>;
export type TokensGroupRow = z.infer<typeof TokensGroupRowSchema>;
export type UserTokenBreakdown = z.infer<typeof UserTokenBreakdownSchema>;
export type ToolsRow = z.infer<typeof ToolsRowSchema>;
export type ToolsGroupRow = z.infer<typeof ToolsGroupRowSchema>;
export type ActivityRow = z.infer<typeof ActivityRowSchema>;
export type ActivityGroupRow = z.infer<typeof ActivityGroupRowSchema>;
export type ProductivityRow = z.infer<typeof ProductivityRowSchema>;
export type UserRow = z.infer<typeof UserRowSchema>;
