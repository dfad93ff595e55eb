import type { PrismaClient } from '../../db/client.ts';
import type { SerializedJson } from '../../http/serialized-json.ts';
import type { Clock } from '../../lib/clock.ts';
import { BadRequest } from '../../lib/errors.ts';
import { ANALYTICS_EPOCH, addDays, dayOf } from './dates.ts';
import { envelope, mergeObjects, serialize } from './json-text.ts';
import type { ActivityDay, StoredUserTokens, TokensDay, ToolsDay } from './rollup.ts';
import type {
  ActivityGroupRow,
  ActivityResponse,
  ProductivityResponse,
  RangeQuery,
  TokensGroupRow,
  TokensResponse,
  ToolsGroupRow,
  ToolsResponse,
  UserTokenBreakdown,
  UsersQuery,
  UsersResponse,
} from './schemas.ts';

export const TODAY_DETAIL = "Cannot query today's date - analytics data has a 24-hour lag";

export function createAnalyticsService(deps: { db: PrismaClient; clock: Clock }) {
  const { db } = deps;

  /**
   * The date rules of spec 4.8: start <= end, through yesterday (UTC), not before 2026-01-14. A
   * range reaching back before the organization's own first day is answered with the days it has:
   * a client that asks from the documented earliest date must work.
   */
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
    if (q.startDate < ANALYTICS_EPOCH) {
      throw new BadRequest(
        `startDate ${q.startDate} is before ${ANALYTICS_EPOCH}, when analytics history begins; pass a startDate on or after ${ANALYTICS_EPOCH}`,
      );
    }
    return { org_id: organizationId, start_date: q.startDate, end_date: q.endDate };
  }

  /**
   * The rolled-up days in range, oldest first; days not rolled up yet are absent. `columns` picks
   * the stored documents, as text (`tools::text AS tools`) to serve them or as values to flatten.
   */
  async function days<R>(organizationId: string, q: RangeQuery, columns: string) {
    return db.$queryRawUnsafe<({ date: string } & R)[]>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS date, ${columns}
         FROM analytics_org_days
        WHERE organization_id = $1 AND day BETWEEN $2::date AND $3::date
        ORDER BY day`,
      organizationId,
      q.startDate,
      q.endDate,
    );
  }

  async function emails(ids: Iterable<string>): Promise<Map<string, string>> {
    const list = [...new Set(ids)];
    if (list.length === 0) return new Map();
    const rows = await db.$queryRawUnsafe<{ id: string; email: string }[]>(`SELECT id, email FROM users WHERE id = ANY($1::text[])`, list);
    return new Map(rows.map((r) => [r.id, r.email]));
  }

  const dateField = (day: string) => JSON.stringify({ date: day });

  return {
    async tokens(organizationId: string, q: RangeQuery & { group_by?: 'model' }): Promise<SerializedJson<TokensResponse>> {
      const meta = await checkRange(organizationId, q);
      if (q.group_by === 'model') {
        const rows = await days<{ tokens: TokensDay }>(organizationId, q, 'tokens');
        const data = rows.flatMap(({ date, tokens }): TokensGroupRow[] => {
          const byId = new Map<string, { billable_tokens: number; input_tokens: number; output_tokens: number }>();
          for (const m of tokens.by_model) {
            const acc = byId.get(m.model_id) ?? { billable_tokens: 0, input_tokens: 0, output_tokens: 0 };
            acc.billable_tokens += m.billable_tokens;
            acc.input_tokens += m.input_tokens;
            acc.output_tokens += m.output_tokens;
            byId.set(m.model_id, acc);
          }
          return [...byId].map(([group_key, sums]) => ({ date, group_key, ...sums }));
        });
        return serialize<TokensResponse>({ data, meta });
      }
      // by_user comes as its own column: merging it into `tokens` in SQL (`||`) rebuilt a year of
      // jsonb documents. It is parsed to add each user's current email; the rest is served as text.
      const rows = await days<{ tokens: string; by_user: StoredUserTokens[] }>(organizationId, q, 'tokens::text AS tokens, tokens_by_user AS by_user');
      const email = await emails(rows.flatMap(({ by_user }) => by_user.map((u) => u.user_id)));
      return envelope<TokensResponse>(
        rows.map((r) => {
          const byUser = r.by_user.map(
            (u): UserTokenBreakdown => ({
              user_id: u.user_id,
              user_email: email.get(u.user_id) ?? null,
              billable_tokens: u.billable_tokens,
              by_model: u.by_model,
            }),
          );
          return mergeObjects(dateField(r.date), r.tokens, JSON.stringify({ by_user: byUser }));
        }),
        meta,
      );
    },

    async tools(organizationId: string, q: RangeQuery & { group_by?: 'tool_name' }): Promise<SerializedJson<ToolsResponse>> {
      const meta = await checkRange(organizationId, q);
      if (q.group_by === 'tool_name') {
        const rows = await days<{ tools: ToolsDay }>(organizationId, q, 'tools');
        const data = rows.flatMap(({ date, tools }) => tools.by_tool.map((t): ToolsGroupRow => ({ date, group_key: t.tool, tool_calls: t.invocations })));
        return serialize<ToolsResponse>({ data, meta });
      }
      const rows = await days<{ tools: string }>(organizationId, q, 'tools::text AS tools');
      return envelope<ToolsResponse>(
        rows.map((r) => mergeObjects(dateField(r.date), r.tools)),
        meta,
      );
    },

    async activity(organizationId: string, q: RangeQuery & { group_by?: 'client' }): Promise<SerializedJson<ActivityResponse>> {
      const meta = await checkRange(organizationId, q);
      if (q.group_by === 'client') {
        const rows = await days<{ activity: ActivityDay }>(organizationId, q, 'activity');
        const data = rows.flatMap(({ date, activity }) =>
          (['terminal-ui', 'web', 'non-interactive-cli'] as const).map(
            (client): ActivityGroupRow => ({
              date,
              group_key: client,
              daily_active_users: activity.daily_active_users_by_client[client],
            }),
          ),
        );
        return serialize<ActivityResponse>({ data, meta });
      }
      const rows = await days<{ daily_active_users: number; weekly_active_users: number; monthly_active_users: number; activity: string }>(
        organizationId,
        q,
        'daily_active_users, weekly_active_users, monthly_active_users, activity::text AS activity',
      );
      return envelope<ActivityResponse>(
        rows.map(({ activity, ...counts }) => mergeObjects(JSON.stringify(counts), activity)),
        meta,
      );
    },

    async productivity(organizationId: string, q: RangeQuery): Promise<SerializedJson<ProductivityResponse>> {
      const meta = await checkRange(organizationId, q);
      const rows = await days<{ productivity: string }>(organizationId, q, 'productivity::text AS productivity');
      return envelope<ProductivityResponse>(
        rows.map((r) => mergeObjects(dateField(r.date), r.productivity)),
        meta,
      );
    },

    /**
     * A page of up to `limit` users active in the range, in user id order, each with one row per
     * day they were active; `next_cursor` is the page's last user id.
     */
    async users(organizationId: string, q: UsersQuery): Promise<SerializedJson<UsersResponse>> {
      const meta = await checkRange(organizationId, q);
      const page = await db.$queryRawUnsafe<{ user_id: string }[]>(
        `SELECT ou.user_id FROM analytics_org_users ou
          WHERE ou.organization_id = $1 AND ($2::text IS NULL OR ou.user_id > $2::text)
            AND EXISTS (SELECT 1 FROM analytics_user_days d
                         WHERE d.organization_id = $1 AND d.user_id = ou.user_id AND d.day BETWEEN $3::date AND $4::date)
          ORDER BY ou.user_id
          LIMIT $5::int`,
        organizationId,
        q.cursor ?? null,
        q.startDate,
        q.endDate,
        q.limit + 1,
      );
      const hasMore = page.length > q.limit;
      const ids = page.slice(0, q.limit).map((r) => r.user_id);
      const pagedMeta = { ...meta, has_more: hasMore, next_cursor: hasMore ? ids[ids.length - 1]! : null };
      if (ids.length === 0) return envelope<UsersResponse>([], pagedMeta);
      // The page holds every user with a day in range from its first id to its last, so the
      // range's rows between those ids are the page's rows: one index range, already in order.
      // Each row was rendered at roll-up; only the user's current email is added here.
      const rows = await db.$queryRawUnsafe<{ user_email: string | null; users_row: string }[]>(
        `SELECT u.email AS user_email, d.users_row::text AS users_row
           FROM analytics_user_days d LEFT JOIN users u ON u.id = d.user_id
          WHERE d.organization_id = $1 AND d.user_id BETWEEN $2 AND $3 AND d.day BETWEEN $4::date AND $5::date
          ORDER BY d.user_id, d.day`,
        organizationId,
        ids[0],
        ids[ids.length - 1],
        q.startDate,
        q.endDate,
      );
      return envelope<UsersResponse>(
        rows.map((r) => mergeObjects(JSON.stringify({ user_email: r.user_email }), r.users_row)),
        pagedMeta,
      );
    },
  };
}
export type AnalyticsService = ReturnType<typeof createAnalyticsService>;
