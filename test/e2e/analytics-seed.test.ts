import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BY_USER_TOP } from '../../src/modules/analytics/metrics.ts';
import { seedAnalytics } from '../../src/modules/analytics/seed.ts';
import { ANALYTICS_VARIANTS, expectAnalyticsShape } from '../support/analytics-shapes.ts';
import { createOrgFixture, startTestApi, type TestApi } from '../support/api.ts';
import { CLI, REPO_ROOT } from '../support/server-process.ts';
import { BACKENDS } from '../support/test-db.ts';
import { seedDataDir } from '../support/pglite-template.ts';

const run = promisify(execFile);

describe.each(BACKENDS)('analytics seed on %s', (backend) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi(backend);
  });
  afterAll(() => api?.close());

  async function snapshot(orgId: string) {
    const prisma = api.db.prisma;
    const events = await prisma.$queryRawUnsafe<{ kind: string; n: number; tokens: number }[]>(
      `SELECT kind, count(*)::int AS n, sum(input_tokens + output_tokens)::float8 AS tokens
         FROM analytics_events WHERE organization_id = $1 GROUP BY kind ORDER BY kind`,
      orgId,
    );
    const days = await prisma.analyticsOrgDay.findMany({ where: { organizationId: orgId }, orderBy: { day: 'asc' }, omit: { rolledUpAt: true } });
    return { events, days };
  }

  it('writes the same events for the same seed, replaces them when run again, and rolls the days up', async () => {
    const org = await createOrgFixture(api.db, `seed-${backend}`);
    const opts = { organizationId: org.id, users: 8, days: 14, endDay: '2026-03-01', seed: 42 };
    const first = await seedAnalytics(api.db.prisma, opts);
    expect(first.days).toHaveLength(14);
    expect(first.days[0]).toBe('2026-02-16');
    const a = await snapshot(org.id);
    expect(a.days).toHaveLength(14);
    expect(a.events.map((e) => e.kind)).toEqual(expect.arrayContaining(['token_usage', 'tool_call', 'message', 'session_started', 'file_edited']));
    await seedAnalytics(api.db.prisma, opts);
    expect(await snapshot(org.id)).toEqual(a);
    await seedAnalytics(api.db.prisma, { ...opts, seed: 43 });
    expect((await snapshot(org.id)).events).not.toEqual(a.events);
    // Weekdays are busier than weekends: 2026-02-21/22 and 2026-02-28/03-01 are weekends.
    const active = new Map(a.days.map((d) => [d.day.toISOString().slice(0, 10), d.dailyActive]));
    const weekend = ['2026-02-21', '2026-02-22', '2026-02-28', '2026-03-01'].map((d) => active.get(d)!);
    const weekdays = [...active].filter(([d]) => !['2026-02-21', '2026-02-22', '2026-02-28', '2026-03-01'].includes(d)).map(([, n]) => n);
    expect(Math.max(...weekend)).toBeLessThan(weekdays.reduce((s, n) => s + n, 0) / weekdays.length);
  });

  it('serves seeded days in exactly the schemas, by_user holding the top users of each day', async () => {
    const org = await createOrgFixture(api.db, `serve-${backend}`);
    await seedAnalytics(api.db.prisma, { organizationId: org.id, users: 30, days: 7, endDay: '2026-03-06', seed: 7 });
    const get = async (endpoint: string, extra = '') => {
      const path = `/api/v1/analytics/${endpoint}?startDate=2026-02-28&endDate=2026-03-06${extra}`;
      const res = await api.call('GET', path, { as: org.members.manager.apiKey });
      expect(res.status, path).toBe(200);
      return res.body;
    };
    for (const [endpoint, query] of ANALYTICS_VARIANTS) expectAnalyticsShape(endpoint, await get(endpoint, query), endpoint + query);

    // Against /users, which lists every user's billable tokens per day: the day's total counts
    // everyone, by_user the BY_USER_TOP largest (ties by user id), each with their email.
    const users = (await get('users', '&limit=100')).data as { user_id: string; user_email: string; date: string; billable_tokens: number }[];
    const tokens = (await get('tokens')).data as {
      date: string;
      billable_tokens: number;
      by_user: { user_id: string; user_email: string; billable_tokens: number }[];
    }[];
    expect(tokens).toHaveLength(7);
    let cut = 0;
    for (const day of tokens) {
      const spenders = users.filter((u) => u.date === day.date && u.billable_tokens > 0);
      expect(day.billable_tokens).toBe(spenders.reduce((sum, u) => sum + u.billable_tokens, 0));
      const top = [...spenders].sort((a, b) => b.billable_tokens - a.billable_tokens || (a.user_id < b.user_id ? -1 : 1)).slice(0, BY_USER_TOP);
      expect(day.by_user.map((u) => [u.user_id, u.user_email, u.billable_tokens])).toEqual(top.map((u) => [u.user_id, u.user_email, u.billable_tokens]));
      if (spenders.length > BY_USER_TOP) cut++;
    }
    expect(cut).toBeGreaterThan(0);
  });

  it('refuses days before analytics history starts', async () => {
    await expect(seedAnalytics(api.db.prisma, { organizationId: api.acme.id, users: 1, days: 10, endDay: '2026-01-20', seed: 1 })).rejects.toThrow(
      /reaches back to 2026-01-11, before analytics history starts \(2026-01-14\)/,
    );
  });
});

describe('agentplane analytics seed', () => {
  const dir = seedDataDir(fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-seed-')));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const agentplane = (args: string[]) =>
    run(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env: { ...process.env, AGENTPLANE_LOG_LEVEL: 'warn', AGENTPLANE_DATA_DIR: dir } });

  it('seeds an organization on the embedded database and reports what it wrote', async () => {
    const { organizationId } = JSON.parse((await agentplane(['bootstrap', '--org', 'demo', '--email', 'o@demo.test', '--json'])).stdout);
    const { stdout } = await agentplane(['analytics', 'seed', '--org', organizationId, '--users', '3', '--days', '5', '--seed', '9', '--end', '2026-03-01']);
    expect(stdout).toMatch(/seeded \d+ events for 3 users over 5 days \(2026-02-25 to 2026-03-01\) and rolled them up/);
    await expect(agentplane(['analytics', 'seed', '--org', organizationId, '--users', '0', '--days', '5'])).rejects.toMatchObject({
      stderr: expect.stringContaining('--users must be at least 1'),
    });
  }, 60_000);
});
