import { afterAll, beforeAll, describe, it } from 'vitest';
import { seedAnalytics } from '../../src/modules/analytics/seed.ts';
import { ANALYTICS_VARIANTS } from '../support/analytics-shapes.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { expectOfficialResponse, OFFICIAL_PATHS } from '../support/official-openapi.ts';
import { BACKENDS } from '../support/test-db.ts';
import { fixedClock } from '../../src/lib/clock.ts';

/**
 * Every analytics and readiness answer, success and error, checked against the hosted
 * platform's own published OpenAPI documents (../shared/spec/official/).
 */
describe.each(BACKENDS)("agentplane's answers against the official OpenAPI documents on %s", (backend) => {
  let api: TestApi;
  const range = '?startDate=2026-02-28&endDate=2026-03-06';
  beforeAll(async () => {
    api = await startTestApi(backend, { clock: fixedClock(new Date('2026-03-10T12:00:00Z')) });
    await seedAnalytics(api.db.prisma, { organizationId: api.acme.id, users: 12, days: 7, endDay: '2026-03-06', seed: 3 });
    for (const repo of ['https://github.com/acme/one', 'https://github.com/acme/two']) {
      await api.call('POST', '/api/organization/agent-readiness-reports', {
        as: api.acme.members.user.apiKey,
        body: {
          repoUrl: repo,
          apps: { '.': { description: 'The service' } },
          report: { lint_config: { numerator: 1, denominator: 1, rationale: 'eslint.config.js' } },
        },
      });
    }
  });
  afterAll(() => api?.close());

  const check = async (path: string, as: string | undefined, status: number) => {
    const res = await api.call('GET', path, { as });
    if (res.status !== status) throw new Error(`GET ${path} answered ${res.status}, not ${status}: ${JSON.stringify(res.body)}`);
    expectOfficialResponse(path, status, res.body);
  };

  it('covers every path the documents describe', () => {
    const ours = new Set([...ANALYTICS_VARIANTS.map(([e]) => `/api/v1/analytics/${e}`), '/api/organization/maturity-level-reports']);
    for (const p of OFFICIAL_PATHS) if (!ours.has(p)) throw new Error(`${p} is not exercised`);
  });

  it.each(ANALYTICS_VARIANTS)('analytics %s%s: 200, 400, 401 and 403', async (endpoint, query) => {
    const base = `/api/v1/analytics/${endpoint}`;
    await check(`${base}${range}${query}`, api.acme.members.manager.apiKey, 200);
    await check(`${base}?startDate=2026-01-13&endDate=2026-03-06${query}`, api.acme.members.manager.apiKey, 400);
    await check(`${base}?startDate=2026-03-06${query}`, api.acme.members.manager.apiKey, 400);
    await check(`${base}${range}${query}`, undefined, 401);
    await check(`${base}${range}${query}`, 'apk_not_a_key', 401);
    await check(`${base}${range}${query}`, api.acme.members.user.apiKey, 403);
  });

  it('analytics from the documented earliest date, before the organization had data: 200', async () => {
    for (const [endpoint, query] of ANALYTICS_VARIANTS) {
      await check(`/api/v1/analytics/${endpoint}?startDate=2026-01-14&endDate=2026-03-06${query}`, api.acme.members.manager.apiKey, 200);
    }
  });

  it.each(['/api/organization/maturity-level-reports', '/api/organization/agent-readiness-reports'])('readiness list %s: 200, 400 and 401', async (base) => {
    await check(base, api.acme.members.user.apiKey, 200);
    await check(`${base}?limit=1`, api.acme.members.user.apiKey, 200);
    await check(`${base}?repoId=https://github.com/acme/one`, api.acme.members.user.apiKey, 200);
    await check(`${base}?limit=0`, api.acme.members.user.apiKey, 400);
    await check(`${base}?startAfter=not-a-uuid`, api.acme.members.user.apiKey, 400);
    await check(base, undefined, 401);
  });
});
