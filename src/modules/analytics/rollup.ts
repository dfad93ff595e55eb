import type { Db, PrismaClient } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { ANALYTICS_EPOCH, addDays, dayOf, dayStart, daysBetween, historyStart } from './dates.ts';
import {
  BY_USER_TOP,
  CLIENTS,
  autonomyRatio,
  billableTokens,
  byCountThenKey,
  delegationLevel,
  mean,
  percentile,
  type AutonomyLevel,
  type Client,
  type ModelTier,
  type TokenCounts,
} from './metrics.ts';
import type { ActivityRow, ProductivityRow, TokensRow, ToolsRow, UserRow, UserTokenBreakdown } from './schemas.ts';

/** What the roll-up stores of each endpoint's day row, rendered once and served as stored. */
export type TokensDay = Omit<TokensRow, 'date' | 'by_user'>;
/** A `by_user` element as stored: `user_email` is read when served, so a changed email shows. */
export type StoredUserTokens = Omit<UserTokenBreakdown, 'user_email'>;
export type ToolsDay = Omit<ToolsRow, 'date'>;
export type ActivityDay = Omit<ActivityRow, 'date' | 'daily_active_users' | 'weekly_active_users' | 'monthly_active_users'>;
type ProductivityDay = Omit<ProductivityRow, 'date'>;
/** A /users row as stored: `user_email` is read when served, as in `by_user`. */
type StoredUsersRow = Omit<UserRow, 'user_email'>;
type UserDayMetrics = Omit<StoredUsersRow, 'user_id' | 'date'>;

/**
 * One group of a day's events: everything they share, how many there were, their token sums.
 * Enumerated columns hold what the event schema admitted when the events were recorded.
 */
interface EventGroup {
  user_id: string;
  kind: string;
  client: Client | null;
  model: string | null;
  model_tier: ModelTier | null;
  tool: string | null;
  mcp_server: string | null;
  autonomy_level: AutonomyLevel | null;
  name: string | null;
  hook_event: string | null;
  hook_matcher: string | null;
  hook_command: string | null;
  role: string | null;
  extension: string | null;
  language: string | null;
  n: number;
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
}

interface ModelUsage extends TokenCounts {
  model: string;
  tier: ModelTier;
}

interface UserDay {
  userId: string;
  toolCalls: number;
  mcpCalls: number;
  skillCalls: number;
  slashCommands: number;
  hooks: number;
  userTurns: number;
  sessions: number;
  userMessages: number;
  assistantMessages: number;
  filesCreated: number;
  filesEdited: number;
  gitCommits: number;
  gitPrsCreated: number;
  models: Map<string, ModelUsage>;
  levels: Map<string, number>;
  languages: Map<string, number>;
  clients: Set<string>;
}

const KEY_SEP = '\u0000';

function bump<K>(map: Map<K, number>, key: K, n: number): void {
  map.set(key, (map.get(key) ?? 0) + n);
}

function newUserDay(userId: string): UserDay {
  return {
    userId,
    toolCalls: 0,
    mcpCalls: 0,
    skillCalls: 0,
    slashCommands: 0,
    hooks: 0,
    userTurns: 0,
    sessions: 0,
    userMessages: 0,
    assistantMessages: 0,
    filesCreated: 0,
    filesEdited: 0,
    gitCommits: 0,
    gitPrsCreated: 0,
    models: new Map(),
    levels: new Map(),
    languages: new Map(),
    clients: new Set(),
  };
}

function modelRow(m: ModelUsage): TokensDay['by_model'][number] {
  return { model_id: m.model, model_tier: m.tier, billable_tokens: billableTokens(m), input_tokens: m.input, output_tokens: m.output };
}

const byBillable = (a: { billable_tokens: number; k: string }, b: { billable_tokens: number; k: string }) =>
  b.billable_tokens - a.billable_tokens || (a.k < b.k ? -1 : a.k > b.k ? 1 : 0);

function sortedModels(models: Iterable<ModelUsage>) {
  return [...models]
    .map((m) => ({ ...modelRow(m), k: `${m.model}${KEY_SEP}${m.tier}` }))
    .sort(byBillable)
    .map(({ k: _k, ...row }) => row);
}

/** Folds one day's event groups into the day's per-user rows and the four endpoint rows. */
function summarizeDay(groups: EventGroup[], activeSessions: number) {
  const users = new Map<string, UserDay>();
  const tools = new Map<string, number>();
  const mcpServers = new Map<string, number>();
  const skills = new Map<string, number>();
  const slash = new Map<string, number>();
  const hooks = new Map<string, number>();
  const extensions = new Map<string, number>();
  const languages = new Map<string, number>();
  const levels = new Map<string, number>();
  const clientUsers = new Map<string, Set<string>>(CLIENTS.map((c) => [c, new Set<string>()]));
  const orgModels = new Map<string, ModelUsage>();
  let sessions = 0;
  let userMessages = 0;
  let assistantMessages = 0;

  for (const g of groups) {
    let u = users.get(g.user_id);
    if (!u) users.set(g.user_id, (u = newUserDay(g.user_id)));
    if (g.client) {
      u.clients.add(g.client);
      clientUsers.get(g.client)?.add(g.user_id);
    }
    switch (g.kind) {
      case 'token_usage': {
        for (const [map, key] of [
          [u.models, `${g.model}${KEY_SEP}${g.model_tier}`],
          [orgModels, `${g.model}${KEY_SEP}${g.model_tier}`],
        ] as const) {
          const m = map.get(key) ?? { model: g.model!, tier: g.model_tier!, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
          m.input += g.input;
          m.output += g.output;
          m.cacheRead += g.cache_read;
          m.cacheWrite += g.cache_write;
          map.set(key, m);
        }
        break;
      }
      case 'tool_call':
        u.toolCalls += g.n;
        bump(tools, g.tool!, g.n);
        bump(u.levels, g.autonomy_level!, g.n);
        bump(levels, g.autonomy_level!, g.n);
        if (g.mcp_server) {
          u.mcpCalls += g.n;
          bump(mcpServers, g.mcp_server, g.n);
        }
        break;
      case 'skill':
        u.skillCalls += g.n;
        bump(skills, g.name!, g.n);
        break;
      case 'slash_command':
        u.slashCommands += g.n;
        bump(slash, g.name!, g.n);
        break;
      case 'hook':
        u.hooks += g.n;
        bump(hooks, [g.hook_event, g.hook_matcher ?? '', g.hook_command].join(KEY_SEP), g.n);
        break;
      case 'session_started':
        u.sessions += g.n;
        sessions += g.n;
        break;
      case 'message':
        if (g.role === 'user') {
          u.userMessages += g.n;
          userMessages += g.n;
        } else {
          u.assistantMessages += g.n;
          assistantMessages += g.n;
        }
        break;
      case 'user_turn':
        u.userTurns += g.n;
        break;
      case 'file_created':
      case 'file_edited':
        if (g.kind === 'file_created') u.filesCreated += g.n;
        else u.filesEdited += g.n;
        bump(extensions, g.extension ?? '', g.n);
        bump(languages, g.language!, g.n);
        bump(u.languages, g.language!, g.n);
        break;
      case 'git_commit':
        u.gitCommits += g.n;
        break;
      case 'pull_request_created':
        u.gitPrsCreated += g.n;
        break;
    }
  }

  const userRows = [...users.values()]
    .sort((a, b) => (a.userId < b.userId ? -1 : 1))
    .map((u) => {
      const models = sortedModels(u.models.values());
      const metrics: UserDayMetrics = {
        tool_calls: u.toolCalls,
        billable_tokens: models.reduce((s, m) => s + m.billable_tokens, 0),
        // The model with the most billable tokens that day; none used: empty.
        primary_model: models[0]?.model_id ?? '',
        primary_model_tier: models[0]?.model_tier ?? 'standard',
        files_created: u.filesCreated,
        files_edited: u.filesEdited,
        git_commits: u.gitCommits,
        git_prs_created: u.gitPrsCreated,
        mcp_calls: u.mcpCalls,
        skill_calls: u.skillCalls,
        slash_commands: u.slashCommands,
        hooks: u.hooks,
        sessions: u.sessions,
        messages: u.userMessages + u.assistantMessages,
        user_messages: u.userMessages,
        assistant_messages: u.assistantMessages,
        autonomy_ratio: autonomyRatio(u.toolCalls, u.userTurns),
        delegation_level: delegationLevel(u.levels),
        languages: byCountThenKey(u.languages).map(([l]) => l),
      };
      return { userId: u.userId, userTurns: u.userTurns, clients: [...u.clients].sort(), byModel: models, metrics };
    });

  const total = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  for (const m of orgModels.values()) {
    total.input += m.input;
    total.output += m.output;
    total.cacheRead += m.cacheRead;
    total.cacheWrite += m.cacheWrite;
  }
  // Each (user, model) pair is billed once; the day's and each model's totals are sums of those.
  const modelBillable = new Map<string, number>();
  for (const u of userRows) for (const m of u.byModel) bump(modelBillable, `${m.model_id}${KEY_SEP}${m.model_tier}`, m.billable_tokens);
  const byModel = [...orgModels.entries()]
    .map(([k, m]) => ({ model_id: m.model, model_tier: m.tier, billable_tokens: modelBillable.get(k) ?? 0, input_tokens: m.input, output_tokens: m.output, k }))
    .sort(byBillable)
    .map(({ k: _k, ...row }) => row);
  const tokensByUser: StoredUserTokens[] = userRows
    .filter((u) => u.byModel.length > 0)
    .map((u) => ({ user_id: u.userId, billable_tokens: u.metrics.billable_tokens, by_model: u.byModel, k: u.userId }))
    .sort(byBillable)
    .slice(0, BY_USER_TOP)
    .map(({ k: _k, ...row }) => row);
  const tokens: TokensDay = {
    billable_tokens: userRows.reduce((s, u) => s + u.metrics.billable_tokens, 0),
    input_tokens: total.input,
    output_tokens: total.output,
    cache_read_tokens: total.cacheRead,
    cache_write_tokens: total.cacheWrite,
    by_model: byModel,
  };

  const toolCalls = userRows.reduce((s, u) => s + u.metrics.tool_calls, 0);
  const userTurns = userRows.reduce((s, u) => s + u.userTurns, 0);
  const ratios = userRows.filter((u) => u.userTurns > 0).map((u) => u.metrics.autonomy_ratio);
  const share = (level: string) => (toolCalls > 0 ? (levels.get(level) ?? 0) / toolCalls : 0);
  const toolsRow: ToolsDay = {
    tool_calls: toolCalls,
    by_tool: byCountThenKey(tools).map(([tool, invocations]) => ({ tool, invocations })),
    mcp_users_with_mcp: userRows.filter((u) => u.metrics.mcp_calls > 0).length,
    mcp_by_server: byCountThenKey(mcpServers).map(([server, invocations]) => ({ server, invocations })),
    skills_invocations: userRows.reduce((s, u) => s + u.metrics.skill_calls, 0),
    skills_by_name: byCountThenKey(skills).map(([name, count]) => ({ name, count })),
    slash_commands_invocations: userRows.reduce((s, u) => s + u.metrics.slash_commands, 0),
    slash_commands_by_name: byCountThenKey(slash).map(([name, count]) => ({ name, count })),
    hooks_invocations: userRows.reduce((s, u) => s + u.metrics.hooks, 0),
    hooks_by_event: byCountThenKey(hooks).map(([key, count]) => {
      const [event, matcher, command] = key.split(KEY_SEP) as [string, string, string];
      return { event, matcher, command, count };
    }),
    web_users: clientUsers.get('web')!.size,
    autonomy_ratio_avg: mean(ratios),
    autonomy_ratio_p50: percentile(ratios, 0.5),
    autonomy_ratio_p90: percentile(ratios, 0.9),
    tool_calls_per_session_avg: activeSessions > 0 ? toolCalls / activeSessions : 0,
    user_turns_per_session_avg: activeSessions > 0 ? userTurns / activeSessions : 0,
    tool_autonomy_level_ratio: {
      auto_high: share('auto-high'),
      auto_medium: share('auto-medium'),
      auto_low: share('auto-low'),
      manual: share('manual'),
    },
  };
  const usersOn = (client: Client) => clientUsers.get(client)!.size;
  const activity: ActivityDay = {
    daily_active_users_by_client: { 'terminal-ui': usersOn('terminal-ui'), web: usersOn('web'), 'non-interactive-cli': usersOn('non-interactive-cli') },
    sessions,
    messages: userMessages + assistantMessages,
    user_messages: userMessages,
  };
  const productivity: ProductivityDay = {
    files_created: userRows.reduce((s, u) => s + u.metrics.files_created, 0),
    files_edited: userRows.reduce((s, u) => s + u.metrics.files_edited, 0),
    by_extension: byCountThenKey(extensions).map(([extension, count]) => ({ extension, count })),
    by_language: byCountThenKey(languages).map(([language, count]) => ({ language, count })),
    git_commits: userRows.reduce((s, u) => s + u.metrics.git_commits, 0),
    git_prs_created: userRows.reduce((s, u) => s + u.metrics.git_prs_created, 0),
  };
  return { userRows, dailyActive: userRows.length, tokens, tokensByUser, tools: toolsRow, activity, productivity };
}

const GROUP_COLUMNS =
  'user_id, kind, client, model, model_tier, tool, mcp_server, autonomy_level, name, hook_event, hook_matcher, hook_command, role, extension, language';

const USER_DAY_COLUMNS = [
  'organization_id',
  'day',
  'user_id',
  'tool_calls',
  'mcp_calls',
  'skill_calls',
  'slash_commands',
  'hooks',
  'user_turns',
  'sessions',
  'user_messages',
  'assistant_messages',
  'files_created',
  'files_edited',
  'git_commits',
  'git_prs_created',
  'billable_tokens',
  'primary_model',
  'primary_model_tier',
  'autonomy_ratio',
  'delegation_level',
  'languages',
  'clients',
  'users_row',
];
const USER_DAY_ROWS_PER_INSERT = Math.floor(60_000 / USER_DAY_COLUMNS.length);

/** Rolls up one UTC day of one organization: delete and insert, inside the caller's transaction. */
async function rollupDay(tx: Db, organizationId: string, day: string): Promise<void> {
  const from = dayStart(day).toISOString();
  const to = dayStart(addDays(day, 1)).toISOString();
  const groups = await tx.$queryRawUnsafe<EventGroup[]>(
    `SELECT ${GROUP_COLUMNS}, count(*)::int AS n,
            sum(input_tokens)::float8 AS input, sum(output_tokens)::float8 AS output,
            sum(cache_read_tokens)::float8 AS cache_read, sum(cache_write_tokens)::float8 AS cache_write
       FROM analytics_events
      WHERE organization_id = $1 AND occurred_at >= $2::timestamptz AND occurred_at < $3::timestamptz
      GROUP BY ${GROUP_COLUMNS}`,
    organizationId,
    from,
    to,
  );
  const [{ sessions }] = await tx.$queryRawUnsafe<[{ sessions: number }]>(
    `SELECT count(DISTINCT session_id)::int AS sessions FROM analytics_events
      WHERE organization_id = $1 AND occurred_at >= $2::timestamptz AND occurred_at < $3::timestamptz
        AND session_id IS NOT NULL`,
    organizationId,
    from,
    to,
  );
  const day$ = summarizeDay(groups, sessions);

  await tx.$executeRawUnsafe(`DELETE FROM analytics_user_days WHERE organization_id = $1 AND day = $2::date`, organizationId, day);
  await tx.$executeRawUnsafe(`DELETE FROM analytics_org_days WHERE organization_id = $1 AND day = $2::date`, organizationId, day);
  for (let i = 0; i < day$.userRows.length; i += USER_DAY_ROWS_PER_INSERT) {
    const params: unknown[] = [];
    const tuples = day$.userRows.slice(i, i + USER_DAY_ROWS_PER_INSERT).map((u) => {
      const m = u.metrics;
      const values = [
        organizationId,
        day,
        u.userId,
        m.tool_calls,
        m.mcp_calls,
        m.skill_calls,
        m.slash_commands,
        m.hooks,
        u.userTurns,
        m.sessions,
        m.user_messages,
        m.assistant_messages,
        m.files_created,
        m.files_edited,
        m.git_commits,
        m.git_prs_created,
        m.billable_tokens,
        m.primary_model,
        m.primary_model_tier,
        m.autonomy_ratio,
        m.delegation_level,
        m.languages,
        u.clients,
        JSON.stringify({ user_id: u.userId, date: day, ...m } satisfies StoredUsersRow),
      ];
      const casts: Record<number, string> = { 1: '::date', 16: '::bigint', 19: '::float8', 21: '::text[]', 22: '::text[]', 23: '::json' };
      return `(${values.map((v, j) => (params.push(v), `$${params.length}${casts[j] ?? (j >= 3 && j <= 15 ? '::int' : '')}`)).join(',')})`;
    });
    await tx.$executeRawUnsafe(`INSERT INTO analytics_user_days (${USER_DAY_COLUMNS.join(',')}) VALUES ${tuples.join(',')}`, ...params);
  }
  if (day$.userRows.length > 0) {
    await tx.$executeRawUnsafe(
      `INSERT INTO analytics_org_users (organization_id, user_id)
       SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
      organizationId,
      day$.userRows.map((u) => u.userId),
    );
  }
  await tx.$executeRawUnsafe(
    `INSERT INTO analytics_org_days
       (organization_id, day, rolled_up_at, daily_active_users, tokens, tokens_by_user, tools, activity, productivity)
     VALUES ($1, $2::date, now(), $3::int, $4::jsonb, $5::jsonb, $6::jsonb, $7::jsonb, $8::jsonb)`,
    organizationId,
    day,
    day$.dailyActive,
    JSON.stringify(day$.tokens),
    JSON.stringify(day$.tokensByUser),
    JSON.stringify(day$.tools),
    JSON.stringify(day$.activity),
    JSON.stringify(day$.productivity),
  );
}

/**
 * Weekly (trailing 7 days) and monthly (trailing 30 days) active users of the rolled-up days from
 * `from` to `to`: exact distinct counts over the per-day user sets.
 */
async function refreshWindows(tx: Db, organizationId: string, from: string, to: string): Promise<void> {
  await tx.$executeRawUnsafe(
    `UPDATE analytics_org_days o
        SET weekly_active_users = w.wau, monthly_active_users = w.mau
       FROM (SELECT t.day,
                    count(DISTINCT u.user_id) FILTER (WHERE u.day > t.day - 7)::int AS wau,
                    count(DISTINCT u.user_id)::int AS mau
               FROM analytics_org_days t
               LEFT JOIN analytics_user_days u
                 ON u.organization_id = t.organization_id AND u.day > t.day - 30 AND u.day <= t.day
              WHERE t.organization_id = $1 AND t.day BETWEEN $2::date AND $3::date
              GROUP BY t.day) w
      WHERE o.organization_id = $1 AND o.day = w.day`,
    organizationId,
    from,
    to,
  );
}

/** Days per transaction: bounds how long a back-fill holds the database (PGlite has one connection). */
const DAYS_PER_TRANSACTION = 31;

/**
 * Rolls up the given days of one organization. Idempotent: each day's rows are deleted and
 * inserted again in one transaction, which also refreshes the window counts of the 29 days after
 * it, so re-running a day (late events) keeps later days exact.
 */
export async function rollupDays(prisma: PrismaClient, organizationId: string, days: readonly string[]): Promise<void> {
  const sorted = [...new Set(days)].sort();
  for (let i = 0; i < sorted.length; i += DAYS_PER_TRANSACTION) {
    const chunk = sorted.slice(i, i + DAYS_PER_TRANSACTION);
    await prisma.$transaction(
      async (tx) => {
        // Two runs over the same organization (a retry beside a manual run) take turns.
        await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(hashtext('agentplane.analytics.' || $1))`, organizationId);
        for (const day of chunk) await rollupDay(tx, organizationId, day);
        await refreshWindows(tx, organizationId, chunk[0]!, addDays(chunk[chunk.length - 1]!, 29));
      },
      { timeout: 600_000, maxWait: 60_000 },
    );
  }
}

/**
 * The days one organization needs rolled up as of `yesterday`: days since its history start that
 * have no roll-up yet, and days whose events were recorded after the organization's last roll-up.
 */
async function dueDays(db: Db, organizationId: string, createdAt: Date, yesterday: string): Promise<string[]> {
  const [state] = await db.$queryRawUnsafe<{ first_day: string | null; last_rollup: Date | null }[]>(
    `SELECT to_char(min(day), 'YYYY-MM-DD') AS first_day, max(rolled_up_at) AS last_rollup
       FROM analytics_org_days WHERE organization_id = $1`,
    organizationId,
  );
  const start = historyStart(createdAt, state?.first_day ?? null);
  const done = new Set(
    (
      await db.$queryRawUnsafe<{ day: string }[]>(
        `SELECT to_char(day, 'YYYY-MM-DD') AS day FROM analytics_org_days
          WHERE organization_id = $1 AND day BETWEEN $2::date AND $3::date`,
        organizationId,
        start,
        yesterday,
      )
    ).map((r) => r.day),
  );
  const due = start <= yesterday ? daysBetween(start, yesterday).filter((d) => !done.has(d)) : [];
  const late = await db.$queryRawUnsafe<{ day: string }[]>(
    `SELECT DISTINCT to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day FROM analytics_events
      WHERE recorded_at > $2::timestamptz AND organization_id = $1
        AND occurred_at >= $3::timestamptz AND occurred_at < $4::timestamptz`,
    organizationId,
    (state?.last_rollup ?? new Date(0)).toISOString(),
    dayStart(ANALYTICS_EPOCH).toISOString(),
    dayStart(addDays(yesterday, 1)).toISOString(),
  );
  return [...new Set([...due, ...late.map((r) => r.day)])].sort();
}

/** Rolls up every organization's due days through yesterday (UTC); what the daily job runs. */
export async function rollupDue(deps: { prisma: PrismaClient; clock: Clock }): Promise<{ organizationId: string; days: string[] }[]> {
  const yesterday = addDays(dayOf(deps.clock.now()), -1);
  const orgs = await deps.prisma.organization.findMany({ select: { id: true, createdAt: true }, orderBy: { id: 'asc' } });
  const done: { organizationId: string; days: string[] }[] = [];
  for (const org of orgs) {
    const days = await dueDays(deps.prisma, org.id, org.createdAt, yesterday);
    if (days.length === 0) continue;
    await rollupDays(deps.prisma, org.id, days);
    done.push({ organizationId: org.id, days });
  }
  return done;
}
