import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/lib/clock.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';
import { git, useFixtureRepos } from '../unit/readiness/fixture-repo.ts';
import { NEGLECTED, NEGLECTED_SCORES, WELL_KEPT, WELL_KEPT_APPS, WELL_KEPT_LEVEL, WELL_KEPT_SCORES, scoresOf } from '../unit/readiness/fixture-scores.ts';
import { startGitHttpServer } from '../unit/readiness/git-http-server.ts';

const BASE = '/api/organization/agent-readiness-reports';
const LEGACY = '/api/organization/maturity-level-reports';
const REQUEST_ERROR_KEYS = ['detail', 'requestId', 'status', 'title'];

const report = (repoUrl: string, extra: Record<string, unknown> = {}) => ({
  repoUrl,
  apps: { '.': { description: 'The service' } },
  report: { lint_config: { numerator: 1, denominator: 1, rationale: 'eslint.config.js' } },
  ...extra,
});

describe.each(BACKENDS)('readiness reports on %s', (backend) => {
  const clock = fixedClock(new Date('2026-05-01T10:00:00.000Z'));
  const fixtures = useFixtureRepos();
  let api: TestApi;
  let gitServer: Awaited<ReturnType<typeof startGitHttpServer>>;
  let acmeUser: string;
  let acmeGuest: string;
  let globexUser: string;

  beforeAll(async () => {
    api = await startTestApi(backend, { clock, worker: true, env: ALLOW_LOOPBACK });
    gitServer = await startGitHttpServer(fixtures.root);
    acmeUser = api.acme.members.user.apiKey;
    acmeGuest = api.acme.members.guest.jwt;
    globexUser = api.globex.members.user.apiKey;
  });
  afterAll(async () => {
    await gitServer?.close();
    await api?.close();
  });

  async function ingest(body: unknown, as = acmeUser) {
    const res = await api.call('POST', BASE, { as, body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    clock.advance(1_000);
    return res.body as { reportId: string; createdAt: number };
  }

  function expectRequestError(res: { status: number; body: any }, status: number, detail: RegExp) {
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(Object.keys(res.body).sort()).toEqual(REQUEST_ERROR_KEYS);
    expect(res.body.status).toBe(status);
    expect(res.body.detail).toMatch(detail);
    expect(res.body.requestId).toEqual(expect.any(String));
  }

  describe('ingestion', () => {
    it('stores a report and answers 201 with it, all optional fields null when absent', async () => {
      const res = await api.call('POST', BASE, { as: acmeUser, body: report('https://github.com/acme/ingest-min') });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        reportId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        createdAt: clock.now().getTime(),
        repoUrl: 'https://github.com/acme/ingest-min',
        apps: { '.': { description: 'The service' } },
        report: { lint_config: { numerator: 1, denominator: 1, rationale: 'eslint.config.js' } },
        commitHash: null,
        branch: null,
        hasLocalChanges: null,
        hasNonRemoteCommits: null,
        modelUsed: null,
        agentVersion: null,
      });
      const full = await ingest(
        report('git@github.com:acme/ingest-full.git', {
          commitHash: 'a'.repeat(40),
          branch: 'main',
          hasLocalChanges: true,
          hasNonRemoteCommits: false,
          modelUsed: { id: 'claude-sonnet-4-5', reasoningEffort: 'high' },
          agentVersion: '1.2.3',
        }),
      );
      const listed = await api.call('GET', `${BASE}?repoId=${encodeURIComponent('https://github.com/Acme/ingest-full')}`, { as: acmeUser });
      expect(listed.body.reports).toEqual([
        expect.objectContaining({
          reportId: full.reportId,
          commitHash: 'a'.repeat(40),
          branch: 'main',
          hasLocalChanges: true,
          hasNonRemoteCommits: false,
          modelUsed: { id: 'claude-sonnet-4-5', reasoningEffort: 'high' },
          agentVersion: '1.2.3',
        }),
      ]);
    });

    it.each([
      ['numerator above denominator', { report: { a: { numerator: 3, denominator: 2, rationale: 'x' } } }, /numerator must not exceed denominator/],
      ['negative numerator', { report: { a: { numerator: -1, denominator: 2, rationale: 'x' } } }, /report\.a\.numerator: must be at least 0/],
      ['denominator below 1', { report: { a: { numerator: 0, denominator: 0, rationale: 'x' } } }, /denominator: must be at least 1/],
      ['blank rationale', { report: { a: { numerator: 0, denominator: 1, rationale: '  ' } } }, /rationale: must not be empty/],
      ['no criteria', { report: {} }, /report: must hold at least one criterion/],
      ['unknown reasoning effort', { modelUsed: { id: 'm', reasoningEffort: 'extreme' } }, /modelUsed\.reasoningEffort: must be one of low, medium, high, off/],
      ['modelUsed without id', { modelUsed: { reasoningEffort: 'low' } }, /modelUsed\.id/],
      ['app without description', { apps: { '.': {} } }, /apps\.\.\.description/],
      ['a repoUrl that is no URL', { repoUrl: 'acme app' }, /repoUrl: must be a repository URL/],
      ['reportId chosen by the client', { reportId: '00000000-0000-4000-8000-000000000000' }, /Unrecognized key: "reportId"/],
    ])('refuses %s with 400', async (_name, change, detail) => {
      const before = (await api.call('GET', `${BASE}?limit=1000`, { as: acmeUser })).body.reports.length;
      const res = await api.call('POST', BASE, { as: acmeUser, body: { ...report('https://github.com/acme/invalid'), ...change } });
      expectRequestError(res, 400, detail);
      expect((await api.call('GET', `${BASE}?limit=1000`, { as: acmeUser })).body.reports.length).toBe(before);
    });

    it('lets guests read but not write, and refuses missing credentials with 401', async () => {
      expectRequestError(await api.call('POST', BASE, { as: acmeGuest, body: report('https://github.com/acme/guest') }), 403, /Guests can read/);
      expect((await api.call('GET', BASE, { as: acmeGuest })).status).toBe(200);
      expect((await api.call('POST', BASE, { as: api.acme.serviceAccount.apiKey, body: report('https://github.com/acme/robot') })).status).toBe(201);
      expectRequestError(await api.call('GET', BASE), 401, /.+/);
      expectRequestError(await api.call('GET', LEGACY, { as: 'fk-not-a-key' }), 401, /.+/);
    });
  });

  describe('listing', () => {
    it('pages newest first with startAfter, unaffected by reports added between pages', async () => {
      const repo = 'https://gitlab.com/acme/paging';
      const first = [];
      for (let i = 0; i < 5; i++) first.push((await ingest(report(repo, { agentVersion: `v${i}` }))).reportId);
      const q = `repoId=${encodeURIComponent(repo)}&limit=2`;
      const page1 = (await api.call('GET', `${BASE}?${q}`, { as: acmeUser })).body.reports.map((r: any) => r.reportId);
      expect(page1).toEqual([first[4], first[3]]);
      const added = [(await ingest(report(repo))).reportId, (await ingest(report(repo))).reportId];
      const page2 = (await api.call('GET', `${BASE}?${q}&startAfter=${page1[1]}`, { as: acmeUser })).body.reports.map((r: any) => r.reportId);
      expect(page2).toEqual([first[2], first[1]]);
      const page3 = (await api.call('GET', `${LEGACY}?${q}&startAfter=${page2[1]}`, { as: acmeUser })).body.reports.map((r: any) => r.reportId);
      expect(page3).toEqual([first[0]]);
      expect((await api.call('GET', `${BASE}?${q}&startAfter=${first[0]}`, { as: acmeUser })).body).toEqual({ reports: [] });
      const fresh = (await api.call('GET', `${BASE}?${q}`, { as: acmeUser })).body.reports.map((r: any) => r.reportId);
      expect(fresh).toEqual([added[1], added[0]]);
    });

    it('pages reports created in the same millisecond without repeats or gaps', async () => {
      const repo = 'https://github.com/acme/same-instant';
      const ids = [];
      for (let i = 0; i < 4; i++) {
        const res = await api.call('POST', BASE, { as: acmeUser, body: report(repo) });
        ids.push(res.body.reportId as string);
      }
      clock.advance(1_000);
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const res = await api.call('GET', `${BASE}?repoId=${encodeURIComponent(repo)}&limit=1${after ? `&startAfter=${after}` : ''}`, { as: acmeUser });
        if (res.body.reports.length === 0) break;
        after = res.body.reports[0].reportId;
        seen.push(after!);
      }
      expect(seen.sort()).toEqual([...ids].sort());
    });

    it('serves the maturity-level-reports alias with the same body', async () => {
      const a = await api.call('GET', `${BASE}?limit=3`, { as: acmeUser });
      const b = await api.call('GET', `${LEGACY}?limit=3`, { as: acmeUser });
      expect(b.status).toBe(200);
      expect(b.body).toEqual(a.body);
      expect(a.body.reports).toHaveLength(3);
    });

    it.each([
      ['limit=0', /limit: must be a positive integer/],
      ['limit=-1', /limit: must be a positive integer/],
      ['limit=abc', /limit: must be a positive integer/],
      ['limit=1.5', /limit: must be a positive integer/],
      ['limit=1001', /limit: must be at most 1000/],
      ['startAfter=42', /startAfter: must be a reportId/],
      ['startAfter=6f1c1a8e-8f5e-4c1e-9d59-2b0d3c9a7e11', /is not a report of this organization/],
      ['repoId=not%20a%20repo', /repoId: must be a repository URL/],
    ])('refuses %s with 400', async (query, detail) => {
      expectRequestError(await api.call('GET', `${BASE}?${query}`, { as: acmeUser }), 400, detail);
    });

    it("never shows another organization's reports, nor pages from them", async () => {
      const mine = await ingest(report('https://github.com/globex/secret'), globexUser);
      const acmeList = (await api.call('GET', `${BASE}?limit=1000`, { as: acmeUser })).body.reports;
      expect(acmeList.length).toBeGreaterThan(0);
      expect(acmeList.map((r: any) => r.reportId)).not.toContain(mine.reportId);
      expect((await api.call('GET', `${BASE}?repoId=${encodeURIComponent('https://github.com/globex/secret')}`, { as: acmeUser })).body).toEqual({
        reports: [],
      });
      expectRequestError(await api.call('GET', `${BASE}?startAfter=${mine.reportId}`, { as: acmeUser }), 400, /not a report of this organization/);
      const globexList = (await api.call('GET', `${BASE}?limit=1000`, { as: globexUser })).body.reports;
      expect(globexList.map((r: any) => r.reportId)).toEqual([mine.reportId]);
    });
  });

  describe('evaluation', () => {
    async function settled(evaluationId: string, as = acmeUser) {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const res = await api.call('GET', `${BASE}/evaluations/${evaluationId}`, { as });
        expect(res.status).toBe(200);
        if (res.body.status === 'succeeded' || res.body.status === 'failed') return res.body;
        if (Date.now() > deadline) throw new Error(`evaluation ${evaluationId} still ${res.body.status}`);
        await sleep(200);
      }
    }

    it('clones a repository, scores every criterion and stores the report', async () => {
      const repo = fixtures.make(WELL_KEPT);
      const url = gitServer.publish(repo.dir, 'well-kept');
      const res = await api.call('POST', `${BASE}/evaluate`, { as: acmeUser, body: { repoUrl: url } });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      expect(res.body).toMatchObject({ status: 'queued', repoUrl: url, branch: null, computerId: null, reportId: null, level: null, error: null });
      expect(res.headers.get('location')).toBe(`${BASE}/evaluations/${res.body.evaluationId}`);

      const done = await settled(res.body.evaluationId);
      expect(done).toMatchObject({ status: 'succeeded', level: WELL_KEPT_LEVEL, error: null, reportId: expect.any(String) });
      expect(done.completedAt).toEqual(expect.any(Number));

      const listed = (await api.call('GET', `${BASE}?repoId=${encodeURIComponent(url)}`, { as: acmeUser })).body.reports;
      expect(listed).toHaveLength(1);
      const stored = listed[0];
      expect(stored.reportId).toBe(done.reportId);
      expect(stored.apps).toEqual(WELL_KEPT_APPS);
      expect(scoresOf(stored.report)).toEqual(WELL_KEPT_SCORES);
      expect(stored).toMatchObject({
        commitHash: git(repo.dir, 'rev-parse', 'HEAD').trim(),
        branch: 'main',
        hasLocalChanges: false,
        hasNonRemoteCommits: false,
        modelUsed: null,
        agentVersion: null,
      });
    });

    it('evaluates the branch asked for', async () => {
      const repo = fixtures.make(NEGLECTED);
      git(repo.dir, 'checkout', '-q', '-b', 'tidy');
      git(repo.dir, 'rm', '-q', '.env');
      git(repo.dir, 'commit', '-q', '-m', 'drop .env');
      const tidyHead = git(repo.dir, 'rev-parse', 'HEAD').trim();
      git(repo.dir, 'checkout', '-q', 'main');
      const url = gitServer.publish(repo.dir, 'neglected');

      const onMain = await settled((await api.call('POST', `${BASE}/evaluate`, { as: acmeUser, body: { repoUrl: url } })).body.evaluationId);
      const onTidy = await settled((await api.call('POST', `${BASE}/evaluate`, { as: acmeUser, body: { repoUrl: url, branch: 'tidy' } })).body.evaluationId);
      const reports = (await api.call('GET', `${BASE}?repoId=${encodeURIComponent(url)}`, { as: acmeUser })).body.reports;
      const main = reports.find((r: any) => r.reportId === onMain.reportId);
      const tidy = reports.find((r: any) => r.reportId === onTidy.reportId);
      expect(scoresOf(main.report)).toEqual(NEGLECTED_SCORES);
      expect(main.branch).toBe('main');
      expect(tidy).toMatchObject({ branch: 'tidy', commitHash: tidyHead });
      expect(tidy.report.secrets_hygiene.rationale).not.toContain('.env');
      expect(onTidy.level).toBe(1);
    });

    it('fails an evaluation whose repository cannot be cloned, saying why', async () => {
      const url = `${gitServer.url}/nowhere.git`;
      const res = await api.call('POST', `${BASE}/evaluate`, { as: acmeUser, body: { repoUrl: url, branch: 'main' } });
      const done = await settled(res.body.evaluationId);
      expect(done).toMatchObject({ status: 'failed', reportId: null, level: null });
      expect(done.error).toContain(`cloning ${url} (branch main) on local failed`);
      expect((await api.call('GET', `${BASE}?repoId=${encodeURIComponent(url)}`, { as: acmeUser })).body).toEqual({ reports: [] });
    });

    it.each([
      [{ repoUrl: 'file:///etc' }, /repoUrl: uses file:/],
      [{ repoUrl: '/srv/git/app' }, /repoUrl: is not a repository URL/],
      [{ repoUrl: 'https://github.com/acme/app', branch: '--upload-pack=touch' }, /branch: is not a valid git branch name/],
      [{ repoUrl: 'https://github.com/acme/app', branch: 'a..b' }, /branch: is not a valid git branch name/],
      [{ repoUrl: 'https://github.com/acme/app', extra: 1 }, /Unrecognized key: "extra"/],
    ])('refuses %j with 400', async (body, detail) => {
      expectRequestError(await api.call('POST', `${BASE}/evaluate`, { as: acmeUser, body }), 400, detail);
    });

    it('answers 404 for a computer the caller cannot reach', async () => {
      const body = { repoUrl: 'https://github.com/acme/app', computerId: 'cmp_123' };
      expectRequestError(await api.call('POST', `${BASE}/evaluate`, { as: acmeUser, body }), 404, /Computer cmp_123 not found/);
    });

    it('keeps evaluations to their organization and from guests', async () => {
      const res = await api.call('POST', `${BASE}/evaluate`, { as: acmeUser, body: { repoUrl: `${gitServer.url}/nowhere-2.git` } });
      expect(res.status).toBe(202);
      expectRequestError(await api.call('GET', `${BASE}/evaluations/${res.body.evaluationId}`, { as: globexUser }), 404, /No readiness evaluation/);
      expectRequestError(await api.call('GET', `${BASE}/evaluations/not-a-uuid`, { as: acmeUser }), 404, /No readiness evaluation/);
      expectRequestError(await api.call('POST', `${BASE}/evaluate`, { as: acmeGuest, body: { repoUrl: 'https://github.com/acme/app' } }), 403, /Guests/);
      await settled(res.body.evaluationId);
    });
  });
});
