import type { PrismaClient } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { BadRequest } from '../../lib/errors.ts';
import { addDays, dayOf, historyStart } from './dates.ts';
import type {
  ActivityResponse,
  ProductivityResponse,
  RangeQuery,
  TokensResponse,
  ToolsResponse,
  UsersQuery,
  UsersResponse,
} from './schemas.ts';

type TokensDay = Omit<Extract<TokensResponse['data'][number], { by_user: unknown }>, 'date' | 'by_user'> & {
  by_user: { user_id: string; billable_tokens: number; by_model: Extract<TokensResponse['data'][number], { by_model: unknown }>['by_model'] }[];
};
type ToolsDay = Omit<Extract<ToolsResponse['data'][number], { by_tool: unknown }>, 'date'>;
type ActivityDay = Pick<
  Extract<ActivityResponse['data'][number], { sessions: unknown }>,
  'daily_active_users_by_client' | 'sessions' | 'messages' | 'user_messages'
>;
type ProductivityDay = Omit<ProductivityResponse['data'][number], 'date'>;


export const TODAY_DETAIL = "Cannot query today's date - analytics data has a 24-hour lag";

export function createAnalyticsService(deps: { db: PrismaClient; clock: Clock }) {
  const { db } = deps;

  /** The date rules of spec 4.8: start <= end, through yesterday (UTC), not before history start. */
  async function checkRange(organizationId: string, q: RangeQuery) {
    if (q.startDate > q.endDate) {
      throw new BadRequest(`startDate ${q.startDate} is after endDate ${q.endDate}; pass a startDate on or before endDate`);
    }
    const today = dayOf(deps.clock.now());
    const yesterday = addDays(today, -1);
    if (q.endDate === today || q.startDate === today) throw new BadRequest(TODAY_DETAIL);
    if (q.endDate > today) {
      throw new BadRequest(`endDate ${q.endDate} is in the future; analytics data is available through yesterday (${yesterday}, UTC)`);
    }
    const [org] = await db.$queryRawUnsafe<{ created_at: Date; first_day: string | null }[]>(
      `SELECT o.created_at,
              (SELECT to_char(min(day), 'YYYY-MM-DD') FROM analytics_org_days d WHERE d.organization_id = o.id) AS first_day
         FROM organizations o WHERE o.id = $1`,
      organizationId,
    );
    const start = historyStart(new Date(org!.created_at), org!.first_day);
    if (q.startDate < start) {
      throw new BadRequest(
        `startDate ${q.startDate} is before this organization's analytics history, which starts on ${start}; pass a startDate on or after it`,
      );
    }
    return { org_id: organizationId, start_date: q.startDate, end_date: q.endDate };
  }

  /** The rolled-up days in range, oldest first; days not rolled up yet are absent. */
  async function days<T, X = unknown>(organizationId: string, q: RangeQuery, column: string, extra = '') {
    return db.$queryRawUnsafe<({ date: string; daily_active_users: number; weekly_active_users: number; monthly_active_users: number } & { row: T } & X)[]>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS date, daily_active_users, weekly_active_users, monthly_active_users, ${column} AS row${extra}
         FROM analytics_org_days
        WHERE organization_id = $1 AND day BETWEEN $2::date AND $3::date
        ORDER BY day`,
      organizationId, q.startDate, q.endDate,
    );
  }

  async function emails(ids: Iterable<string>): Promise<Map<string, string>> {
    const list = [...new Set(ids)];
    if (list.length === 0) return new Map();
    const rows = await db.$queryRawUnsafe<{ id: string; email: string }[]>(
      `SELECT id, email FROM users WHERE id = ANY($1::text[])`,
      list,
    );
    return new Map(rows.map((r) => [r.id, r.email]));
  }

  return {
    async tokens(organizationId: string, q: RangeQuery & { group_by?: 'model' }): Promise<TokensResponse> {
      const meta = await checkRange(organizationId, q);
      if (q.group_by === 'model') {
        const rows = await days<Omit<TokensDay, 'by_user'>>(organizationId, q, 'tokens');
        const data = rows.flatMap(({ date, row }) => {
          const byId = new Map<string, { billable_tokens: number; input_tokens: number; output_tokens: number }>();
          for (const m of row.by_model) {
            const acc = byId.get(m.model_id) ?? { billable_tokens: 0, input_tokens: 0, output_tokens: 0 };
            acc.billable_tokens += m.billable_tokens;
            acc.input_tokens += m.input_tokens;
            acc.output_tokens += m.output_tokens;
            byId.set(m.model_id, acc);
          }
          return [...byId].map(([group_key, sums]) => ({ date, group_key, ...sums }));
        });
        return { data, meta };
      }
      // by_user comes as its own column: merging it into `tokens` in SQL (`||`) rebuilt a year of
      // large jsonb documents and doubled the query's time.
      const rows = await days<Omit<TokensDay, 'by_user'>, Pick<TokensDay, 'by_user'>>(organizationId, q, 'tokens', ', tokens_by_user AS by_user');
      const email = await emails(rows.flatMap(({ by_user }) => by_user.map((u) => u.user_id)));
      const data = rows.map(({ date, row, by_user }) => ({
        date,
        ...row,
        by_user: by_user.map((u) => ({
          user_id: u.user_id,
          user_email: email.get(u.user_id) ?? null,
          billable_tokens: u.billable_tokens,
          by_model: u.by_model,
        })),
      }));
      return { data, meta };
    },

    async tools(organizationId: string, q: RangeQuery & { group_by?: 'tool_name' }): Promise<ToolsResponse> {
      const meta = await checkRange(organizationId, q);
      const rows = await days<ToolsDay>(organizationId, q, 'tools');
      if (q.group_by === 'tool_name') {
        return {
          data: rows.flatMap(({ date, row }) => row.by_tool.map((t) => ({ date, group_key: t.tool, tool_calls: t.invocations }))),
          meta,
        };
      }
      return { data: rows.map(({ date, row }) => ({ date, ...row })), meta };
    },

    async activity(organizationId: string, q: RangeQuery & { group_by?: 'client' }): Promise<ActivityResponse> {
      const meta = await checkRange(organizationId, q);
      const rows = await days<ActivityDay>(organizationId, q, 'activity');
      if (q.group_by === 'client') {
        return {
          data: rows.flatMap(({ date, row }) =>
            (['terminal-ui', 'web', 'non-interactive-cli'] as const).map((client) => ({
              date,
              group_key: client,
              daily_active_users: row.daily_active_users_by_client[client],
            })),
          ),
          meta,
        };
      }
      return {
        data: rows.map((r) => ({
          date: r.date,
          daily_active_users: r.daily_active_users,
          weekly_active_users: r.weekly_active_users,
          monthly_active_users: r.monthly_active_users,
          ...r.row,
        })),
        meta,
      };
    },

    async productivity(organizationId: string, q: RangeQuery): Promise<ProductivityResponse> {
      const meta = await checkRange(organizationId, q);
      const rows = await days<ProductivityDay>(organizationId, q, 'productivity');
      return { data: rows.map(({ date, row }) => ({ date, ...row })), meta };
    },

    /**
     * A page of up to `limit` users active in the range, in user id order, each with one row per
     * day they were active; `next_cursor` is the page's last user id.
     */
    async users(organizationId: string, q: UsersQuery): Promise<UsersResponse> {
      const meta = await checkRange(organizationId, q);
      const page = await db.$queryRawUnsafe<{ user_id: string }[]>(
        `SELECT ou.user_id FROM analytics_org_users ou
          WHERE ou.organization_id = $1 AND ($2::text IS NULL OR ou.user_id > $2::text)
            AND EXISTS (SELECT 1 FROM analytics_user_days d
                         WHERE d.organization_id = $1 AND d.user_id = ou.user_id AND d.day BETWEEN $3::date AND $4::date)
          ORDER BY ou.user_id
          LIMIT $5::int`,
        organizationId, q.cursor ?? null, q.startDate, q.endDate, q.limit + 1,
      );
      const hasMore = page.length > q.limit;
      const ids = page.slice(0, q.limit).map((r) => r.user_id);
      // Built as one JSON document in SQL: a page is thousands of user-days, and one text value
      // crosses the driver far faster than thousands of rows of 22 columns. json_agg of a row
      // (keys from the column names) builds it in about 60% of the time json_build_object took.
      const [{ rows }] = await db.$queryRawUnsafe<[{ rows: string }]>(
        `SELECT coalesce(json_agg(r ORDER BY r.user_id, r.date)::text, '[]') AS rows
           FROM (SELECT d.user_id, u.email AS user_email, to_char(d.day, 'YYYY-MM-DD') AS date,
                        d.tool_calls, d.billable_tokens, d.primary_model, d.primary_model_tier,
                        d.files_created, d.files_edited, d.git_commits, d.git_prs_created,
                        d.mcp_calls, d.skill_calls, d.slash_commands, d.hooks, d.sessions,
                        d.user_messages + d.assistant_messages AS messages, d.user_messages,
                        d.assistant_messages, d.autonomy_ratio, d.delegation_level, d.languages
                   FROM analytics_user_days d LEFT JOIN users u ON u.id = d.user_id
                  WHERE d.organization_id = $1 AND d.user_id = ANY($2::text[])
                    AND d.day BETWEEN $3::date AND $4::date) r`,
        organizationId, ids, q.startDate, q.endDate,
      );
      return {
        data: JSON.parse(rows) as UsersResponse['data'],
        meta: { ...meta, has_more: hasMore, next_cursor: hasMore ? ids[ids.length - 1]! : null },
      };
    },
  };
}
export type AnalyticsService = ReturnType<typeof createAnalyticsService>;
