import { z } from 'zod';
import type { Db } from '../../db/client.ts';
import type { SqlPart } from '../../db/sql-part.ts';
import { AUTONOMY_LEVELS, billableTokens, CLIENTS, MODEL_TIERS } from './metrics.ts';

const count = z.number().int().nonnegative();
const label = z.string().min(1).max(200);

const base = {
  organizationId: z.string().min(1),
  userId: z.string().min(1),
  occurredAt: z.date(),
  sessionId: z.string().min(1).optional(),
  /** Where the user worked: the interactive CLI, the web app or the headless CLI. */
  client: z.enum(CLIENTS).optional(),
};

/** One thing that happened on the platform, as other modules report it to analytics. */
const AnalyticsEventSchema = z.discriminatedUnion('kind', [
  z.object({
    ...base,
    kind: z.literal('token_usage'),
    model: label,
    modelTier: z.enum(MODEL_TIERS),
    /** Uncached input tokens; cache reads and writes are counted apart. */
    inputTokens: count,
    outputTokens: count,
    cacheReadTokens: count.default(0),
    cacheWriteTokens: count.default(0),
    /** Credits the call cost (the model's pricing); default: its billable tokens, one credit each. */
    serviceCredits: z.number().nonnegative().optional(),
  }),
  z.object({
    ...base,
    kind: z.literal('tool_call'),
    tool: label,
    /** Set when the tool is served by an MCP server. */
    mcpServer: label.optional(),
    autonomyLevel: z.enum(AUTONOMY_LEVELS),
  }),
  z.object({ ...base, kind: z.literal('skill'), name: label }),
  z.object({ ...base, kind: z.literal('slash_command'), name: label }),
  z.object({
    ...base,
    kind: z.literal('hook'),
    hookEvent: label,
    hookMatcher: z.string().max(200).default(''),
    hookCommand: z.string().min(1).max(1000),
  }),
  z.object({ ...base, kind: z.literal('session_started') }),
  z.object({ ...base, kind: z.literal('message'), role: z.enum(['user', 'assistant']) }),
  /** A user request that starts an agent turn. */
  z.object({ ...base, kind: z.literal('user_turn') }),
  z.object({ ...base, kind: z.literal('file_created'), extension: z.string().max(50), language: label }),
  z.object({ ...base, kind: z.literal('file_edited'), extension: z.string().max(50), language: label }),
  z.object({ ...base, kind: z.literal('git_commit') }),
  z.object({ ...base, kind: z.literal('pull_request_created') }),
]);
export type AnalyticsEvent = z.input<typeof AnalyticsEventSchema>;
type ParsedEvent = z.output<typeof AnalyticsEventSchema>;

const COLUMNS = [
  'organization_id',
  'user_id',
  'occurred_at',
  'kind',
  'session_id',
  'client',
  'model',
  'model_tier',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'tool',
  'mcp_server',
  'autonomy_level',
  'name',
  'hook_event',
  'hook_matcher',
  'hook_command',
  'role',
  'extension',
  'language',
  'service_credits',
] as const;

function creditsOf(e: ParsedEvent): number {
  if (e.kind !== 'token_usage') return 0;
  return e.serviceCredits ?? billableTokens({ input: e.inputTokens, output: e.outputTokens, cacheRead: e.cacheReadTokens, cacheWrite: e.cacheWriteTokens });
}

function toRow(e: ParsedEvent): unknown[] {
  const v = e as Partial<Record<string, unknown>> & ParsedEvent;
  return [
    e.organizationId,
    e.userId,
    e.occurredAt.toISOString(),
    e.kind,
    e.sessionId ?? null,
    e.client ?? null,
    v.model ?? null,
    v.modelTier ?? null,
    v.inputTokens ?? 0,
    v.outputTokens ?? 0,
    v.cacheReadTokens ?? 0,
    v.cacheWriteTokens ?? 0,
    v.tool ?? null,
    v.mcpServer ?? null,
    v.autonomyLevel ?? null,
    v.name ?? null,
    v.hookEvent ?? null,
    v.hookMatcher ?? null,
    v.hookCommand ?? null,
    v.role ?? null,
    v.extension ?? null,
    v.language ?? null,
    creditsOf(e),
  ];
}

const COLUMN_TYPES = COLUMNS.map((name) =>
  name === 'occurred_at' ? 'timestamptz' : name.endsWith('_tokens') ? 'bigint' : name === 'service_credits' ? 'float8' : 'text',
);
const ROWS_PER_INSERT = 20_000;

/**
 * The insert of already-built rows (one array per event, in COLUMNS order): one array parameter
 * per column, unnested in SQL, numbered from `$first` (to sit in another statement's WITH).
 */
function rowsInsert(rows: unknown[][], first = 1, when?: string): SqlPart {
  const arrays = COLUMN_TYPES.map((type, j) => `$${first + j}::${type}[]`).join(', ');
  return {
    sql: `INSERT INTO analytics_events (${COLUMNS.join(',')}) SELECT * FROM unnest(${arrays})${when ? ` WHERE ${when}` : ''}`,
    params: COLUMNS.map((_, j) => rows.map((row) => row[j])),
  };
}

/** Bulk insert of already-built rows, a batch of 20,000 events per short statement (rowsInsert). */
export async function insertEventRows(db: Db, rows: unknown[][]): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const { sql, params } = rowsInsert(rows.slice(i, i + ROWS_PER_INSERT));
    await db.$executeRawUnsafe(sql, ...params);
  }
}

/** The rows of `events`, validated: an invalid event is a bug of its reporter and throws. */
function rowsOf(events: readonly AnalyticsEvent[]): unknown[][] {
  return events.map((e, i) => {
    const parsed = AnalyticsEventSchema.safeParse(e);
    if (!parsed.success) throw new Error(`analytics event ${i}: ${z.prettifyError(parsed.error)}`);
    return toRow(parsed.data);
  });
}

/**
 * The insert of `events` as a part of another statement, its parameters numbered from `$first`:
 * a caller that stores other rows in the same transaction saves a round trip (publish's `analytics`).
 * `when`, SQL, stores them only when it holds.
 */
export function analyticsInsert(events: readonly AnalyticsEvent[], first: number, when?: string): SqlPart {
  return rowsInsert(rowsOf(events), first, when);
}

/**
 * Appends events to the analytics store. Pass the caller's transaction so the events commit or
 * roll back with the work they describe. Events of a day already rolled up are picked up by the
 * next roll-up run (it re-rolls days with events recorded after their roll-up).
 */
export async function recordEvents(tx: Db, events: readonly AnalyticsEvent[]): Promise<void> {
  if (events.length === 0) return;
  await insertEventRows(tx, rowsOf(events));
}
