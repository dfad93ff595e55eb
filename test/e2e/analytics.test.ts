import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/lib/clock.ts';
import { recordEvents, type AnalyticsEvent } from '../../src/modules/analytics/events.ts';
import { rollupDays, rollupDue } from '../../src/modules/analytics/rollup.ts';
import { TODAY_DETAIL } from '../../src/modules/analytics/service.ts';
import { ANALYTICS_VARIANTS, expectAnalyticsShape } from '../support/analytics-shapes.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';

/**
 * Hand-computed fixtures: five users of acme over a few days around the end of February 2026
 * ("today" is 2026-03-03, so data runs through 2026-03-02). Every expected number below was worked
 * out by hand from the events in `fixtureEvents`.
 */
const TODAY = new Date('2026-03-03T12:00:00.000Z');
const A = '/api/v1/analytics';

const at = (iso: string) => new Date(iso);

describe.each(BACKENDS)('analytics on %s', (backend) => {
  const clock = fixedClock(TODAY);
  let api: TestApi;
  // U1 = acme user, U2 = acme guest, U3 = acme manager, U4 = a user whose record is gone, U5 = acme owner.
  let U1: string, U2: string, U3: string, U5: string;
  const U4 = 'usr_0gone0000000000000000';
  let manager: string;

  function fixtureEvents(org: string): AnalyticsEvent[] {
    const e = (userId: string, iso: string, rest: Record<string, unknown>) => ({ organizationId: org, userId, occurredAt: at(iso), ...rest }) as AnalyticsEvent;
    const s1 = { sessionId: 's1', client: 'terminal-ui' };
    const s1w = { sessionId: 's1w', client: 'web' };
    const s2 = { sessionId: 's2', client: 'web' };
    const d27 = '2026-02-27T10:00:00.000Z';
    return [
      // 2026-01-31: U3 on the web (inside the 30-day window of 03-01, outside that of 03-02).
      e(U3, '2026-01-31T09:00:00.000Z', { kind: 'session_started', sessionId: 's3', client: 'web' }),
      e(U3, '2026-01-31T09:01:00.000Z', { kind: 'message', role: 'user', sessionId: 's3', client: 'web' }),
      // 2026-02-20: U4, tokens only, no client (inside the 7-day window of 02-26, outside that of 02-27).
      e(U4, '2026-02-20T00:00:00.000Z', { kind: 'token_usage', model: 'gpt-5-codex', modelTier: 'standard', inputTokens: 1000, outputTokens: 0 }),
      // 2026-02-27: U1 on terminal-ui (session s1) and the web (s1w); U2 on the web (s2).
      e(U1, d27, { kind: 'session_started', ...s1 }),
      ...[1, 2].map(() => e(U1, d27, { kind: 'user_turn', ...s1 })),
      ...[1, 2].map(() => e(U1, d27, { kind: 'message', role: 'user', ...s1 })),
      ...[1, 2, 3].map(() => e(U1, d27, { kind: 'message', role: 'assistant', ...s1 })),
      ...[1, 2, 3].map(() => e(U1, d27, { kind: 'tool_call', tool: 'Read', autonomyLevel: 'auto-high', ...s1 })),
      e(U1, d27, { kind: 'tool_call', tool: 'Edit', autonomyLevel: 'auto-high', ...s1 }),
      e(U1, d27, { kind: 'tool_call', tool: 'linear___create_issue', mcpServer: 'linear', autonomyLevel: 'auto-medium', ...s1 }),
      e(U1, d27, {
        kind: 'token_usage',
        model: 'claude-sonnet-4-5',
        modelTier: 'standard',
        inputTokens: 1000,
        outputTokens: 500,
        cacheReadTokens: 2000,
        cacheWriteTokens: 100,
        ...s1,
      }),
      e(U1, d27, { kind: 'token_usage', model: 'claude-sonnet-4-5', modelTier: 'standard', inputTokens: 500, outputTokens: 250, cacheReadTokens: 1000, ...s1 }),
      e(U1, d27, { kind: 'token_usage', model: 'claude-sonnet-4-5', modelTier: 'thinking', inputTokens: 200, outputTokens: 100, ...s1 }),
      e(U1, d27, { kind: 'file_edited', extension: 'ts', language: 'TypeScript', ...s1 }),
      e(U1, d27, { kind: 'file_edited', extension: 'ts', language: 'TypeScript', ...s1 }),
      e(U1, d27, { kind: 'file_created', extension: 'py', language: 'Python', ...s1 }),
      e(U1, d27, { kind: 'git_commit', ...s1 }),
      e(U1, d27, { kind: 'skill', name: 'frontend-design', ...s1 }),
      e(U1, d27, { kind: 'slash_command', name: '/review', ...s1 }),
      ...[1, 2].map(() => e(U1, d27, { kind: 'hook', hookEvent: 'PreToolUse', hookMatcher: 'Execute', hookCommand: 'lint.sh', ...s1 })),
      e(U1, '2026-02-27T20:00:00.000Z', { kind: 'session_started', ...s1w }),
      e(U1, '2026-02-27T20:00:01.000Z', { kind: 'message', role: 'user', ...s1w }),
      e(U2, d27, { kind: 'session_started', ...s2 }),
      e(U2, d27, { kind: 'user_turn', ...s2 }),
      e(U2, d27, { kind: 'message', role: 'user', ...s2 }),
      e(U2, d27, { kind: 'message', role: 'assistant', ...s2 }),
      e(U2, d27, { kind: 'tool_call', tool: 'Grep', autonomyLevel: 'manual', ...s2 }),
      e(U2, d27, { kind: 'tool_call', tool: 'Execute', autonomyLevel: 'auto-low', ...s2 }),
      e(U2, d27, { kind: 'token_usage', model: 'gpt-5-codex', modelTier: 'standard', inputTokens: 100, outputTokens: 50, ...s2 }),
      e(U2, d27, { kind: 'pull_request_created', ...s2 }),
      e(U2, d27, { kind: 'file_created', extension: 'go', language: 'Go', ...s2 }),
      // 2026-03-01: U5 headless.
      ...(['session_started', 'user_turn'] as const).map((kind) => e(U5, '2026-03-01T08:00:00.000Z', { kind, sessionId: 's5', client: 'non-interactive-cli' })),
      e(U5, '2026-03-01T08:00:00.000Z', { kind: 'message', role: 'user', sessionId: 's5', client: 'non-interactive-cli' }),
      e(U5, '2026-03-01T08:00:00.000Z', { kind: 'tool_call', tool: 'Read', autonomyLevel: 'auto-high', sessionId: 's5', client: 'non-interactive-cli' }),
      // 2026-03-02: U1 continues s1; U2 commits in the day's last millisecond and again at midnight (today).
      e(U1, '2026-03-02T09:00:00.000Z', { kind: 'user_turn', ...s1 }),
      e(U1, '2026-03-02T09:00:00.000Z', { kind: 'message', role: 'user', ...s1 }),
      e(U1, '2026-03-02T09:00:00.000Z', { kind: 'tool_call', tool: 'Read', autonomyLevel: 'auto-high', ...s1 }),
      e(U2, '2026-03-02T23:59:59.999Z', { kind: 'git_commit' }),
      e(U2, '2026-03-03T00:00:00.000Z', { kind: 'git_commit' }),
    ];
  }

  beforeAll(async () => {
    api = await startTestApi(backend, { clock });
    const m = api.acme.members;
    [U1, U2, U3, U5, manager] = [m.user.userId, m.guest.userId, m.manager.userId, m.owner.userId, m.manager.apiKey];
    const prisma = api.db.prisma;
    await prisma.organization.update({ where: { id: api.acme.id }, data: { createdAt: at('2026-01-20T15:00:00.000Z') } });
    await prisma.organization.update({ where: { id: api.globex.id }, data: { createdAt: at('2025-12-01T00:00:00.000Z') } });
    await prisma.$transaction((tx) => recordEvents(tx, fixtureEvents(api.acme.id)));
    // What the daily job runs: every organization's days from its history start through yesterday.
    const done = await rollupDue({ prisma, clock });
    expect(done.find((d) => d.organizationId === api.acme.id)?.days).toHaveLength(42); // 01-20 .. 03-02
    expect(done.find((d) => d.organizationId === api.globex.id)?.days[0]).toBe('2026-01-14');
  });
  afterAll(() => api?.close());

  const get = (path: string, as = manager) => api.call('GET', path, { as });
  const range = (s: string, e: string, extra = '') => `?startDate=${s}&endDate=${e}${extra}`;

  describe('/tokens', () => {
    it('answers one row per day with totals, by_model and by_user, billed with the cache discount', async () => {
      const res = await get(`${A}/tokens${range('2026-02-26', '2026-02-28')}`);
      expect(res.status).toBe(200);
      expect(res.body.meta).toEqual({ org_id: api.acme.id, start_date: '2026-02-26', end_date: '2026-02-28' });
      const empty = { billable_tokens: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, by_model: [], by_user: [] };
      // U1 sonnet standard: 1500 in + 750 out + 100 cache writes + 3000 cache reads / 10 = 2650.
      const sonnetStd = { model_id: 'claude-sonnet-4-5', model_tier: 'standard', billable_tokens: 2650, input_tokens: 1500, output_tokens: 750 };
      const sonnetThink = { model_id: 'claude-sonnet-4-5', model_tier: 'thinking', billable_tokens: 300, input_tokens: 200, output_tokens: 100 };
      const codex = { model_id: 'gpt-5-codex', model_tier: 'standard', billable_tokens: 150, input_tokens: 100, output_tokens: 50 };
      expect(res.body.data).toEqual([
        { date: '2026-02-26', ...empty },
        {
          date: '2026-02-27',
          billable_tokens: 3100,
          input_tokens: 1800,
          output_tokens: 900,
          cache_read_tokens: 3000,
          cache_write_tokens: 100,
          by_model: [sonnetStd, sonnetThink, codex],
          by_user: [
            { user_id: U1, user_email: 'user@acme.test', billable_tokens: 2950, by_model: [sonnetStd, sonnetThink] },
            { user_id: U2, user_email: 'guest@acme.test', billable_tokens: 150, by_model: [codex] },
          ],
        },
        { date: '2026-02-28', ...empty },
      ]);
    });

    it('names a user whose record is gone with a null email', async () => {
      const res = await get(`${A}/tokens${range('2026-02-20', '2026-02-20')}`);
      expect(res.body.data[0].by_user).toEqual([
        {
          user_id: U4,
          user_email: null,
          billable_tokens: 1000,
          by_model: [{ model_id: 'gpt-5-codex', model_tier: 'standard', billable_tokens: 1000, input_tokens: 1000, output_tokens: 0 }],
        },
      ]);
    });

    it('group_by=model flattens by_model into rows per model id, tiers summed', async () => {
      const res = await get(`${A}/tokens${range('2026-02-20', '2026-02-28', '&group_by=model')}`);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([
        { date: '2026-02-20', group_key: 'gpt-5-codex', billable_tokens: 1000, input_tokens: 1000, output_tokens: 0 },
        { date: '2026-02-27', group_key: 'claude-sonnet-4-5', billable_tokens: 2950, input_tokens: 1700, output_tokens: 850 },
        { date: '2026-02-27', group_key: 'gpt-5-codex', billable_tokens: 150, input_tokens: 100, output_tokens: 50 },
      ]);
    });
  });

  describe('/tools', () => {
    it('answers every tool field, with autonomy ratios over users with a user turn', async () => {
      const res = await get(`${A}/tools${range('2026-02-27', '2026-02-27')}`);
      expect(res.status).toBe(200);
      const [row] = res.body.data;
      expect(row).toEqual({
        date: '2026-02-27',
        tool_calls: 7,
        by_tool: [
          { tool: 'Read', invocations: 3 },
          { tool: 'Edit', invocations: 1 },
          { tool: 'Execute', invocations: 1 },
          { tool: 'Grep', invocations: 1 },
          { tool: 'linear___create_issue', invocations: 1 },
        ],
        mcp_users_with_mcp: 1,
        mcp_by_server: [{ server: 'linear', invocations: 1 }],
        skills_invocations: 1,
        skills_by_name: [{ name: 'frontend-design', count: 1 }],
        slash_commands_invocations: 1,
        slash_commands_by_name: [{ name: '/review', count: 1 }],
        hooks_invocations: 2,
        hooks_by_event: [{ event: 'PreToolUse', matcher: 'Execute', command: 'lint.sh', count: 2 }],
        web_users: 2,
        // U1: 5 calls / 2 turns = 2.5; U2: 2 / 1 = 2.
        autonomy_ratio_avg: 2.25,
        autonomy_ratio_p50: 2.25,
        autonomy_ratio_p90: expect.closeTo(2.45, 10),
        // Sessions with events that day: s1, s1w, s2.
        tool_calls_per_session_avg: expect.closeTo(7 / 3, 10),
        user_turns_per_session_avg: 1,
        tool_autonomy_level_ratio: {
          auto_high: expect.closeTo(4 / 7, 10),
          auto_medium: expect.closeTo(1 / 7, 10),
          auto_low: expect.closeTo(1 / 7, 10),
          manual: expect.closeTo(1 / 7, 10),
        },
      });
    });

    it('leaves users without a user turn out of the ratios and sessions without events out of the averages', async () => {
      const res = await get(`${A}/tools${range('2026-03-02', '2026-03-02')}`);
      expect(res.body.data[0]).toMatchObject({
        tool_calls: 1,
        autonomy_ratio_avg: 1,
        autonomy_ratio_p50: 1,
        autonomy_ratio_p90: 1,
        tool_calls_per_session_avg: 1,
        user_turns_per_session_avg: 1,
        web_users: 0,
        tool_autonomy_level_ratio: { auto_high: 1, auto_medium: 0, auto_low: 0, manual: 0 },
      });
    });

    it('group_by=tool_name flattens by_tool', async () => {
      const res = await get(`${A}/tools${range('2026-02-27', '2026-03-01', '&group_by=tool_name')}`);
      expect(res.body.data).toEqual([
        { date: '2026-02-27', group_key: 'Read', tool_calls: 3 },
        { date: '2026-02-27', group_key: 'Edit', tool_calls: 1 },
        { date: '2026-02-27', group_key: 'Execute', tool_calls: 1 },
        { date: '2026-02-27', group_key: 'Grep', tool_calls: 1 },
        { date: '2026-02-27', group_key: 'linear___create_issue', tool_calls: 1 },
        { date: '2026-03-01', group_key: 'Read', tool_calls: 1 },
      ]);
    });
  });

  describe('/activity', () => {
    it('counts exact distinct users over trailing 7 and 30 days, across the end of February', async () => {
      const res = await get(`${A}/activity${range('2026-01-31', '2026-03-02')}`);
      expect(res.status).toBe(200);
      expect(res.body.data).toHaveLength(31);
      const by = Object.fromEntries(res.body.data.map((r: { date: string }) => [r.date, r]));
      const counts = (d: string) => [by[d].daily_active_users, by[d].weekly_active_users, by[d].monthly_active_users];
      expect(counts('2026-01-31')).toEqual([1, 1, 1]);
      expect(counts('2026-02-01')).toEqual([0, 1, 1]);
      expect(counts('2026-02-20')).toEqual([1, 1, 2]);
      expect(counts('2026-02-26')).toEqual([0, 1, 2]); // U4 of 02-20 is still in 02-20..02-26
      expect(counts('2026-02-27')).toEqual([2, 2, 4]); // ...and not in 02-21..02-27
      expect(counts('2026-02-28')).toEqual([0, 2, 4]);
      expect(counts('2026-03-01')).toEqual([1, 3, 5]); // U3 of 01-31 is in 01-31..03-01
      expect(counts('2026-03-02')).toEqual([2, 3, 4]); // ...and not in 02-01..03-02
    });

    it('counts a user on several clients once in daily_active_users and once per client', async () => {
      const res = await get(`${A}/activity${range('2026-02-27', '2026-02-27')}`);
      expect(res.body.data).toEqual([
        {
          date: '2026-02-27',
          daily_active_users: 2,
          weekly_active_users: 2,
          monthly_active_users: 4,
          daily_active_users_by_client: { 'terminal-ui': 1, web: 2, 'non-interactive-cli': 0 },
          sessions: 3,
          messages: 8,
          user_messages: 4,
        },
      ]);
    });

    it('keeps the day boundary at midnight UTC: an event at 23:59:59.999 counts, one at 00:00 of today does not', async () => {
      const res = await get(`${A}/activity${range('2026-03-02', '2026-03-02')}`);
      expect(res.body.data[0]).toMatchObject({ daily_active_users: 2, sessions: 0, messages: 1, user_messages: 1 });
      const prod = await get(`${A}/productivity${range('2026-03-02', '2026-03-02')}`);
      expect(prod.body.data[0].git_commits).toBe(1);
    });

    it('group_by=client flattens daily_active_users_by_client', async () => {
      const res = await get(`${A}/activity${range('2026-02-27', '2026-02-27', '&group_by=client')}`);
      expect(res.body.data).toEqual([
        { date: '2026-02-27', group_key: 'terminal-ui', daily_active_users: 1 },
        { date: '2026-02-27', group_key: 'web', daily_active_users: 2 },
        { date: '2026-02-27', group_key: 'non-interactive-cli', daily_active_users: 0 },
      ]);
    });
  });

  describe('/productivity', () => {
    it('answers files, extensions, languages, commits and pull requests per day', async () => {
      const res = await get(`${A}/productivity${range('2026-02-27', '2026-02-28')}`);
      expect(res.body.data).toEqual([
        {
          date: '2026-02-27',
          files_created: 2,
          files_edited: 2,
          by_extension: [
            { extension: 'ts', count: 2 },
            { extension: 'go', count: 1 },
            { extension: 'py', count: 1 },
          ],
          by_language: [
            { language: 'TypeScript', count: 2 },
            { language: 'Go', count: 1 },
            { language: 'Python', count: 1 },
          ],
          git_commits: 1,
          git_prs_created: 1,
        },
        { date: '2026-02-28', files_created: 0, files_edited: 0, by_extension: [], by_language: [], git_commits: 0, git_prs_created: 0 },
      ]);
    });
  });

  describe('/users', () => {
    const zero = {
      tool_calls: 0,
      billable_tokens: 0,
      primary_model: '',
      primary_model_tier: 'standard',
      files_created: 0,
      files_edited: 0,
      git_commits: 0,
      git_prs_created: 0,
      mcp_calls: 0,
      skill_calls: 0,
      slash_commands: 0,
      hooks: 0,
      sessions: 0,
      messages: 0,
      user_messages: 0,
      assistant_messages: 0,
      autonomy_ratio: 0,
      delegation_level: 'manual',
      languages: [],
    };
    const rowsOf = (id: string): object[] =>
      ({
        [U1]: [
          {
            ...zero,
            user_id: U1,
            user_email: 'user@acme.test',
            date: '2026-02-27',
            tool_calls: 5,
            billable_tokens: 2950,
            primary_model: 'claude-sonnet-4-5',
            primary_model_tier: 'standard',
            files_created: 1,
            files_edited: 2,
            git_commits: 1,
            mcp_calls: 1,
            skill_calls: 1,
            slash_commands: 1,
            hooks: 2,
            sessions: 2,
            messages: 6,
            user_messages: 3,
            assistant_messages: 3,
            autonomy_ratio: 2.5,
            delegation_level: 'auto-high',
            languages: ['TypeScript', 'Python'],
          },
          {
            ...zero,
            user_id: U1,
            user_email: 'user@acme.test',
            date: '2026-03-02',
            tool_calls: 1,
            messages: 1,
            user_messages: 1,
            autonomy_ratio: 1,
            delegation_level: 'auto-high',
          },
        ],
        [U2]: [
          {
            ...zero,
            user_id: U2,
            user_email: 'guest@acme.test',
            date: '2026-02-27',
            tool_calls: 2,
            billable_tokens: 150,
            primary_model: 'gpt-5-codex',
            files_created: 1,
            git_prs_created: 1,
            sessions: 1,
            messages: 2,
            user_messages: 1,
            // One manual and one auto-low call: the tie goes to the more autonomous level.
            assistant_messages: 1,
            autonomy_ratio: 2,
            delegation_level: 'auto-low',
            languages: ['Go'],
          },
          { ...zero, user_id: U2, user_email: 'guest@acme.test', date: '2026-03-02', git_commits: 1 },
        ],
        [U5]: [
          {
            ...zero,
            user_id: U5,
            user_email: 'owner@acme.test',
            date: '2026-03-01',
            tool_calls: 1,
            sessions: 1,
            messages: 1,
            user_messages: 1,
            autonomy_ratio: 1,
            delegation_level: 'auto-high',
          },
        ],
      })[id]!;

    it('pages through users in id order with has_more and next_cursor, each user with a row per active day', async () => {
      const ids = [U1, U2, U5].sort();
      const first = await get(`${A}/users${range('2026-02-27', '2026-03-02', '&limit=2')}`);
      expect(first.status).toBe(200);
      expect(first.body.meta).toEqual({ org_id: api.acme.id, start_date: '2026-02-27', end_date: '2026-03-02', has_more: true, next_cursor: ids[1] });
      expect(first.body.data).toEqual([...rowsOf(ids[0]!), ...rowsOf(ids[1]!)]);
      const second = await get(`${A}/users${range('2026-02-27', '2026-03-02', `&limit=2&cursor=${first.body.meta.next_cursor}`)}`);
      expect(second.body.meta).toMatchObject({ has_more: false, next_cursor: null });
      expect(second.body.data).toEqual(rowsOf(ids[2]!));
    });

    it('defaults to 20 users and includes users whose record is gone', async () => {
      const res = await get(`${A}/users${range('2026-01-20', '2026-03-02')}`);
      expect(res.body.meta).toMatchObject({ has_more: false, next_cursor: null });
      expect(new Set(res.body.data.map((r: { user_id: string }) => r.user_id))).toEqual(new Set([U1, U2, U3, U4, U5]));
      expect(res.body.data.find((r: { user_id: string }) => r.user_id === U4)).toMatchObject({
        user_email: null,
        date: '2026-02-20',
        billable_tokens: 1000,
        primary_model: 'gpt-5-codex',
      });
    });
  });

  describe('response shapes', () => {
    it('answers every endpoint, grouped or not, paged or empty, in exactly its schema', async () => {
      const all = range('2026-01-20', '2026-03-02');
      const quiet = range('2026-02-02', '2026-02-03');
      const variants = [...ANALYTICS_VARIANTS, ['users', `&limit=1&cursor=${U1}`] as const];
      for (const [endpoint, query] of variants) {
        for (const days of [all, quiet]) {
          const path = `${A}/${endpoint}${days}${query}`;
          const res = await get(path);
          expect(res.status, path).toBe(200);
          expect(res.headers.get('content-type'), path).toBe('application/json; charset=utf-8');
          expectAnalyticsShape(endpoint, res.body, path);
          // Quiet days are rolled up with zeros (one row per day, or per client); no user is listed.
          if (days === quiet && query === '') expect(res.body.data, path).toHaveLength(endpoint === 'users' ? 0 : 2);
        }
      }
    });
  });

  describe('access', () => {
    const endpoints = ['tokens', 'tools', 'activity', 'productivity', 'users'].map((p) => `${A}/${p}${range('2026-02-27', '2026-02-27')}`);

    it('lets managers and owners in with API keys and JWTs', async () => {
      const m = api.acme.members;
      for (const as of [m.manager.apiKey, m.manager.jwt, m.owner.apiKey, m.owner.jwt]) {
        for (const path of endpoints) expect((await get(path, as)).status, path).toBe(200);
      }
    });

    it('refuses users, guests and service accounts with 403 in the analytics error body', async () => {
      const m = api.acme.members;
      for (const as of [m.user.apiKey, m.guest.jwt, api.acme.serviceAccount.apiKey]) {
        for (const path of endpoints) {
          const res = await get(path, as);
          expect(res.status, path).toBe(403);
          expect(Object.keys(res.body).sort()).toEqual(['detail', 'requestId', 'status', 'title']);
          expect(res.body).toMatchObject({ title: 'Forbidden', status: 403 });
        }
      }
    });

    it('answers 401 without credentials', async () => {
      const res = await api.call('GET', endpoints[0]!);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ title: 'Unauthorized', status: 401, requestId: expect.any(String) });
    });

    it('shows an organization only its own data', async () => {
      const res = await get(`${A}/tokens${range('2026-02-27', '2026-02-27')}`, api.globex.members.owner.apiKey);
      expect(res.status).toBe(200);
      expect(res.body.meta.org_id).toBe(api.globex.id);
      expect(res.body.data[0]).toMatchObject({ billable_tokens: 0, by_user: [] });
    });
  });

  describe('date and parameter rules', () => {
    async function expect400(path: string, detail: string | RegExp) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(Object.keys(res.body).sort()).toEqual(['detail', 'requestId', 'status', 'title']);
      expect(res.body).toMatchObject({ title: 'Bad Request', status: 400, requestId: res.headers.get('x-request-id') });
      if (typeof detail === 'string') expect(res.body.detail).toBe(detail);
      else expect(res.body.detail).toMatch(detail);
    }

    it("refuses today's date with the spec's message, and later days", async () => {
      await expect400(`${A}/activity${range('2026-03-01', '2026-03-03')}`, TODAY_DETAIL);
      await expect400(`${A}/users${range('2026-03-03', '2026-03-03')}`, TODAY_DETAIL);
      await expect400(`${A}/tokens${range('2026-03-01', '2026-03-04')}`, /2026-03-04 is in the future.*through yesterday \(2026-03-02/);
      expect((await get(`${A}/activity${range('2026-03-02', '2026-03-02')}`)).status).toBe(200);
    });

    it('refuses malformed and impossible dates and missing ones', async () => {
      await expect400(`${A}/tools${range('2026-2-27', '2026-02-28')}`, /startDate: must be a date in YYYY-MM-DD/);
      await expect400(`${A}/tools${range('2026-02-27', '2026-02-30')}`, /endDate: is not a real calendar date/);
      await expect400(`${A}/tools${range('27/02/2026', '2026-02-28')}`, /startDate/);
      await expect400(`${A}/tools?startDate=2026-02-27`, /endDate/);
    });

    it('refuses a start after the end', async () => {
      await expect400(`${A}/productivity${range('2026-02-28', '2026-02-27')}`, /startDate 2026-02-28 is after endDate 2026-02-27/);
    });

    it("answers a range reaching before the organization's first day with the days it has; refuses days before 2026-01-14", async () => {
      for (const endpoint of ['tokens', 'tools', 'activity', 'productivity', 'users']) {
        const fromEpoch = await get(`${A}/${endpoint}${range('2026-01-14', '2026-01-25')}`);
        expect(fromEpoch.status, endpoint).toBe(200);
        const fromCreation = await get(`${A}/${endpoint}${range('2026-01-20', '2026-01-25')}`);
        expect(fromEpoch.body.data, endpoint).toEqual(fromCreation.body.data);
        if (endpoint !== 'users') expect(fromEpoch.body.meta).toMatchObject({ start_date: '2026-01-14', end_date: '2026-01-25' });
      }
      expect((await get(`${A}/tokens${range('2026-01-20', '2026-01-25')}`)).body.data.length).toBeGreaterThan(0);
      const globex = api.globex.members.manager.apiKey;
      const before = await get(`${A}/activity${range('2026-01-13', '2026-01-20')}`, globex);
      expect(before.status).toBe(400);
      expect(before.body.detail).toBe('startDate 2026-01-13 is before 2026-01-14, when analytics history begins; pass a startDate on or after 2026-01-14');
      const first = await get(`${A}/activity${range('2026-01-14', '2026-01-14')}`, globex);
      expect(first.status).toBe(200);
      expect(first.body.data).toHaveLength(1);
    });

    it('refuses a limit outside 1-100 and an unknown group_by', async () => {
      for (const limit of ['0', '101', 'ten', '-1']) await expect400(`${A}/users${range('2026-02-27', '2026-02-27', `&limit=${limit}`)}`, /limit/);
      expect((await get(`${A}/users${range('2026-02-27', '2026-02-27', '&limit=100')}`)).status).toBe(200);
      expect((await get(`${A}/users${range('2026-02-27', '2026-02-27', '&limit=1')}`)).body.data.length).toBeGreaterThan(0);
      await expect400(`${A}/tokens${range('2026-02-27', '2026-02-27', '&group_by=user')}`, /group_by: must be "model"/);
      await expect400(`${A}/tools${range('2026-02-27', '2026-02-27', '&group_by=model')}`, /group_by: must be "tool_name"/);
      await expect400(`${A}/activity${range('2026-02-27', '2026-02-27', '&group_by=tool_name')}`, /group_by: must be "client"/);
    });
  });

  describe('roll-up', () => {
    const snapshot = async () => {
      const org = api.acme.id;
      const days = await api.db.prisma.analyticsOrgDay.findMany({ where: { organizationId: org }, orderBy: { day: 'asc' }, omit: { rolledUpAt: true } });
      const users = await api.db.prisma.analyticsUserDay.findMany({ where: { organizationId: org }, orderBy: [{ day: 'asc' }, { userId: 'asc' }] });
      return { days, users };
    };

    it('is idempotent: rolling days up again gives the same rows', async () => {
      const before = await snapshot();
      await rollupDays(api.db.prisma, api.acme.id, ['2026-03-02', '2026-02-27', '2026-01-31', '2026-02-20']);
      expect(await snapshot()).toEqual(before);
      expect(await rollupDue({ prisma: api.db.prisma, clock })).toEqual([]);
    });

    it('re-rolls a day that receives events after its roll-up and keeps later windows exact', async () => {
      // U3 comes back on 02-27: DAU of 02-27 and the 30-day window of 03-02 now include U3.
      await recordEvents(api.db.prisma, [
        { organizationId: api.acme.id, userId: U3, occurredAt: at('2026-02-27T12:00:00.000Z'), kind: 'message', role: 'user', client: 'web', sessionId: 's3b' },
      ]);
      const done = await rollupDue({ prisma: api.db.prisma, clock });
      expect(done).toEqual([{ organizationId: api.acme.id, days: ['2026-02-27'] }]);
      const res = await get(`${A}/activity${range('2026-02-27', '2026-03-02')}`);
      expect(
        res.body.data.map((r: { daily_active_users: number; weekly_active_users: number; monthly_active_users: number }) => [
          r.daily_active_users,
          r.weekly_active_users,
          r.monthly_active_users,
        ]),
      ).toEqual([
        [3, 3, 4],
        [0, 3, 4],
        [1, 4, 5],
        [2, 4, 5],
      ]);
      expect(res.body.data[0].daily_active_users_by_client).toEqual({ 'terminal-ui': 1, web: 3, 'non-interactive-cli': 0 });
    });

    it('rolls up the new yesterday when the clock passes midnight', async () => {
      clock.set(new Date('2026-03-04T00:15:00.000Z'));
      try {
        const done = await rollupDue({ prisma: api.db.prisma, clock });
        expect(done.find((d) => d.organizationId === api.acme.id)?.days).toEqual(['2026-03-03']);
        const res = await get(`${A}/productivity${range('2026-03-03', '2026-03-03')}`);
        expect(res.body.data[0].git_commits).toBe(1);
      } finally {
        clock.set(TODAY);
      }
    });
  });
});
