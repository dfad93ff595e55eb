import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { giteaBinDir, giteaMissing, mergeWhenReady, startGitea, type Gitea, type GiteaUser } from '../support/gitea.ts';
import { skipWithout } from '../support/parts.ts';

const bin = giteaBinDir();
const skip = skipWithout('the tests against a real Gitea', giteaMissing());
const SOURCE_CONTROL = '/api/v0/integrations/source-control';
const CI = '/api/v0/automations/ci';

const CI_WORKFLOW = 'name: CI\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo test\n';
const NIGHTLY = `name: nightly agent
on:
  schedule:
    - cron: '17 3 * * 1-5'
  workflow_dispatch:
jobs:
  agent:
    runs-on: ubuntu-latest
    env:
      AGENTPLANE_MODE: custom
      AGENTPLANE_MODEL: scripted
      AGENTPLANE_API_KEY: \${{ secrets.AGENTPLANE_API_KEY }}
    steps:
      - run: npx agentplane ci run
`;

/** The real Gitea forge, driven end to end through agentplane's API. */
describe.skipIf(skip)('CI automations against a real Gitea', () => {
  let gitea: Gitea;
  let api: TestApi;
  let alice: GiteaUser;
  let owner: string;
  let member: string;

  const pulls = async (repo: string) => (await gitea.api('GET', `/repos/${repo}/pulls?state=all&limit=50`)).body as any[];
  const fileAt = async (repo: string, path: string, ref: string) => {
    const res = await gitea.api('GET', `/repos/${repo}/contents/${path}?ref=${encodeURIComponent(ref)}`);
    return res.status === 200 ? Buffer.from(res.body.content, 'base64').toString('utf8') : undefined;
  };

  beforeAll(async () => {
    gitea = await startGitea(bin!);
    alice = await gitea.createUser('alice');
    await gitea.createOrg(alice, 'acme-eng');
    await gitea.createRepo(alice, { name: 'app', files: { '.github/workflows/ci.yml': CI_WORKFLOW } });
    await gitea.createRepo(alice, { org: 'acme-eng', name: 'svc', private: true, files: { '.gitea/workflows/nightly.yaml': NIGHTLY } });
    await gitea.createRepo(alice, { org: 'acme-eng', name: 'broken', files: { '.gitea/workflows/bad.yml': 'name: [unclosed\non: push\n' } });
    await gitea.createRepo(alice, { org: 'acme-eng', name: 'old' });
    expect((await gitea.api('PATCH', '/repos/acme-eng/old', { as: alice, body: { archived: true } })).status).toBe(200);
    api = await startTestApi('pglite', { env: ALLOW_LOOPBACK, worker: true });
    owner = api.acme.members.owner.apiKey;
    member = api.acme.members.user.apiKey;
  }, 180_000);

  afterAll(async () => {
    await api?.close();
    await gitea?.stop();
  });

  describe('before any connection', () => {
    it('owners, repositories, scan and runs answer 200 with connected: false and empty lists', async () => {
      const owners = await api.call('GET', `${CI}/repository-owners`, { as: owner });
      expect(owners.status).toBe(200);
      expect(owners.body).toEqual({ owners: [], integration: { connected: false } });
      const repos = await api.call('GET', `${CI}/repositories`, { as: owner });
      expect(repos.body).toEqual({ repositories: [], integration: { connected: false } });
      const scan = await api.call('GET', `${CI}/scan`, { as: owner });
      expect(scan.body).toMatchObject({ workflows: [], scannedAt: null, cacheTtlMs: 1_800_000, integration: { connected: false } });
      const runs = await api.call('GET', `${CI}/runs`, { as: owner });
      expect(runs.body).toMatchObject({ runs: [], integration: { connected: false } });
    });
  });

  describe('source-control integrations', () => {
    it('refuses a token the forge refuses, with the forge’s reason, and stores nothing', async () => {
      const res = await api.call('POST', SOURCE_CONTROL, { as: owner, body: { provider: 'gitea', baseUrl: gitea.url, token: 'not-a-real-token-0000' } });
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain('refused the token (401)');
      expect(res.body.metadata.forgeStatus).toBe(401);
      expect(await api.db.prisma.sourceControlIntegration.count({ where: { organizationId: api.acme.id } })).toBe(0);
    });

    it('members cannot create one; bad input names the field', async () => {
      const res = await api.call('POST', SOURCE_CONTROL, { as: member, body: { provider: 'gitea', baseUrl: gitea.url, token: alice.token } });
      expect(res.status).toBe(403);
      const bad = await api.call('POST', SOURCE_CONTROL, { as: owner, body: { provider: 'gitlab', baseUrl: 'ftp://x', token: alice.token } });
      expect(bad.status).toBe(400);
      expect(bad.body.detail).toMatch(/provider: .*baseUrl: /);
    });

    it('creates a verified connection: token sealed at rest, masked for managers, absent for members', async () => {
      const res = await api.call('POST', SOURCE_CONTROL, { as: owner, body: { provider: 'gitea', baseUrl: `${gitea.url}/`, token: alice.token } });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        provider: 'gitea',
        baseUrl: gitea.url,
        host: new URL(gitea.url).host,
        login: 'alice',
        username: 'alice',
        origin: 'api',
      });
      expect(res.body.token).toBe(`••••••••${alice.token.slice(-4)}`);
      const stored = await api.db.prisma.sourceControlIntegration.findUniqueOrThrow({ where: { id: res.body.id } });
      expect(stored.tokenCiphertext).not.toContain(alice.token);
      expect(api.machines.secrets.open(stored.tokenCiphertext)).toBe(alice.token);

      const asMember = await api.call('GET', `${SOURCE_CONTROL}/${res.body.id}`, { as: member });
      expect(asMember.status).toBe(200);
      expect(asMember.body).not.toHaveProperty('token');
      const list = await api.call('GET', SOURCE_CONTROL, { as: owner });
      expect(list.body.integrations).toHaveLength(1);
      expect(JSON.stringify(list.body)).not.toContain(alice.token);
      expect((await api.call('GET', `${SOURCE_CONTROL}/${res.body.id}`, { as: api.globex.members.owner.apiKey })).status).toBe(404);
      const again = await api.call('POST', SOURCE_CONTROL, { as: owner, body: { provider: 'gitea', baseUrl: gitea.url, token: alice.token } });
      expect(again.status).toBe(409);
    });
  });

  describe('the six endpoints', () => {
    it('repository-owners: the account and its organizations', async () => {
      const res = await api.call('GET', `${CI}/repository-owners`, { as: member });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        owners: [
          { login: 'alice', type: 'User' },
          { login: 'acme-eng', type: 'Organization' },
        ],
        integration: { connected: true, provider: 'gitea', baseUrl: gitea.url },
      });
    });

    it('repositories: the writable, unarchived ones, filtered by owner', async () => {
      const all = await api.call('GET', `${CI}/repositories`, { as: member });
      expect(all.body.repositories.map((r: any) => r.repoFullName)).toEqual(['acme-eng/broken', 'acme-eng/svc', 'alice/app']);
      expect(all.body.repositories.find((r: any) => r.repoFullName === 'acme-eng/svc')).toMatchObject({
        private: true,
        defaultBranch: 'main',
        url: `${gitea.url}/acme-eng/svc`,
      });
      const org = await api.call('GET', `${CI}/repositories?owner=acme-eng`, { as: member });
      expect(org.body.repositories.map((r: any) => r.repoFullName)).toEqual(['acme-eng/broken', 'acme-eng/svc']);
    });

    it('scan: parses every workflow, reports the broken one, caches 30 minutes, forceRefresh scans anew', async () => {
      const res = await api.call('GET', `${CI}/scan`, { as: member });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ cached: false, cacheTtlMs: 30 * 60 * 1000, repositoriesScanned: 3, integration: { connected: true } });
      expect(res.body.workflows).toEqual([
        {
          repoFullName: 'acme-eng/svc',
          filePath: '.gitea/workflows/nightly.yaml',
          workflowName: 'nightly agent',
          triggerEvents: ['schedule', 'workflow_dispatch'],
          scheduleCron: '17 3 * * 1-5',
          droidActionInputs: { mode: 'custom', model: 'scripted' },
          templateId: 'custom',
        },
        { repoFullName: 'alice/app', filePath: '.github/workflows/ci.yml', workflowName: 'CI', triggerEvents: ['push'], droidActionInputs: {} },
      ]);
      expect(res.body.failures).toEqual([
        { repoFullName: 'acme-eng/broken', filePath: '.gitea/workflows/bad.yml', error: expect.stringContaining('not valid YAML') },
      ]);

      await gitea.commitFiles(alice, 'alice/app', { '.github/workflows/lint.yml': 'name: lint\non: pull_request\njobs: {}\n' });
      const cached = await api.call('GET', `${CI}/scan?forceRefresh=false`, { as: member });
      expect(cached.body).toMatchObject({ cached: true, scannedAt: res.body.scannedAt });
      expect(cached.body.workflows).toHaveLength(2);
      const fresh = await api.call('GET', `${CI}/scan?forceRefresh=true`, { as: member });
      expect(fresh.body.cached).toBe(false);
      expect(fresh.body.scannedAt).toBeGreaterThanOrEqual(res.body.scannedAt);
      expect(fresh.body.workflows.map((w: any) => w.filePath)).toContain('.github/workflows/lint.yml');
      expect((await api.call('GET', `${CI}/scan?forceRefresh=yes`, { as: member })).status).toBe(400);
    });

    it('edit: bad input is 400 naming the field, and touches no forge', async () => {
      const repos = [{ repoFullName: 'alice/app' }];
      const cases: [unknown, RegExp][] = [
        [{ repos }, /action: Provide action \("edit"\|"delete"\|"create"\) and at least one repo\./],
        [{ action: 'create', modeId: 'code-review', repos: [] }, /repos: Provide action/],
        [
          { action: 'edit', repos: [{ repoFullName: 'alice/app', filePath: '.github/workflows/x.yml' }] },
          /changes: Edit action requires a `changes` payload\./,
        ],
        [
          { action: 'create', modeId: 'custom', repos, changes: { customPrompt: 'hi', schedule: '61 * * * *' } },
          /changes\.schedule: not a 5-field cron expression: minute/,
        ],
        [{ action: 'create', modeId: 'custom', repos, changes: { customPrompt: 'hi', githubEvents: ['deploy'] } }, /changes\.githubEvents\.0: unknown event/],
        [{ action: 'create', modeId: 'triage', repos }, /modeId: unknown mode/],
        [{ action: 'create', modeId: 'code-review', repos, changes: { yamlParams: 'colour: blue' } }, /changes\.yamlParams\.colour: unknown input/],
        [{ action: 'create', modeId: 'code-review', repos: [{ repoFullName: 'alice/app', filePath: 'ci.yml' }] }, /repos\.0\.filePath/],
      ];
      for (const [body, detail] of cases) {
        const res = await api.call('POST', `${CI}/edit`, { as: member, body });
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.detail).toMatch(detail);
      }
      expect(await pulls('alice/app')).toEqual([]);
      expect(await api.db.prisma.ciJob.count({ where: { organizationId: api.acme.id } })).toBe(0);
      expect(
        (await api.call('POST', `${CI}/edit`, { as: api.acme.members.guest.apiKey, body: { action: 'create', modeId: 'code-review', repos } })).status,
      ).toBe(403);
    });

    let automationId: string;
    it('edit create: a branch, one commit and a pull request per repository; a failing repository is reported', async () => {
      const res = await api.call('POST', `${CI}/edit`, {
        as: member,
        body: {
          action: 'create',
          automationName: 'Review bot',
          modeId: 'code-review',
          repos: [{ repoFullName: 'alice/app' }, { repoFullName: 'acme-eng/svc' }, { repoFullName: 'acme-eng/missing' }],
          changes: { yamlParams: 'model: scripted\ntimeout-minutes: 20' },
        },
      });
      expect(res.status).toBe(200);
      automationId = res.body.factoryAutomationId;
      expect(automationId).toMatch(/^[0-9a-f-]{36}$/);
      const [app, svc, missing] = res.body.sessions;
      expect(app).toMatchObject({
        repoFullName: 'alice/app',
        filePath: '.github/workflows/agentplane-review-bot.yml',
        prUrl: `${gitea.url}/alice/app/pulls/1`,
      });
      // Gitea runs .gitea/workflows when it exists, so the file goes there.
      expect(svc).toMatchObject({
        repoFullName: 'acme-eng/svc',
        filePath: '.gitea/workflows/agentplane-review-bot.yml',
        prUrl: `${gitea.url}/acme-eng/svc/pulls/1`,
      });
      expect(missing).toMatchObject({ repoFullName: 'acme-eng/missing', error: expect.stringContaining('404') });

      const [pr] = await pulls('alice/app');
      expect(pr).toMatchObject({ number: 1, state: 'open', base: { ref: 'main' } });
      expect(pr.head.ref).toMatch(/^agentplane\/create-review-bot-/);
      const commits = (await gitea.api('GET', `/repos/alice/app/pulls/1/commits`)).body as any[];
      expect(commits).toHaveLength(1);
      const text = (await fileAt('alice/app', app.filePath, pr.head.ref))!;
      const doc = YAML.parse(text);
      expect(doc.on).toEqual({ pull_request: { types: ['opened', 'synchronize', 'reopened', 'ready_for_review'] } });
      expect(doc.concurrency['cancel-in-progress']).toBe(true);
      expect(doc.jobs.agentplane).toMatchObject({
        if: '${{ !github.event.pull_request.draft }}',
        'timeout-minutes': 20,
        env: { AGENTPLANE_AUTOMATION_ID: automationId, AGENTPLANE_MODE: 'code-review', AGENTPLANE_MODEL: 'scripted' },
      });
      expect(doc.jobs.agentplane.steps[0].run).toContain('ci run');
      expect(await fileAt('alice/app', app.filePath, 'main')).toBeUndefined();
    });

    it('edit edit: regenerates only agentplane’s blocks and keeps the user’s own lines', async () => {
      expect(await mergeWhenReady(gitea, 'alice/app', 1, alice)).toBe(200);
      const path = '.github/workflows/agentplane-review-bot.yml';
      const merged = (await fileAt('alice/app', path, 'main'))!;
      const mine = `${merged}  lint:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo mine # user's own job\n`;
      await gitea.commitFiles(alice, 'alice/app', { [path]: mine });
      const res = await api.call('POST', `${CI}/edit`, {
        as: member,
        // No filePath: the automation knows where it wrote its file.
        body: {
          action: 'edit',
          factoryAutomationId: automationId,
          repos: [{ repoFullName: 'alice/app' }],
          changes: { name: 'Review bot 2', yamlParams: 'model: scripted-2' },
        },
      });
      expect(res.status).toBe(200);
      expect(res.body.sessions[0]).toMatchObject({ filePath: path, prUrl: `${gitea.url}/alice/app/pulls/2` });
      const [pr] = (await pulls('alice/app')).filter((p) => p.number === 2);
      const text = (await fileAt('alice/app', path, pr.head.ref))!;
      expect(text).toContain("- run: echo mine # user's own job");
      const doc = YAML.parse(text);
      expect(doc.name).toBe('Review bot 2');
      expect(Object.keys(doc.jobs)).toEqual(['agentplane', 'lint']);
      expect(doc.jobs.agentplane.env.AGENTPLANE_MODEL).toBe('scripted-2');
      expect(doc.jobs.agentplane.env.AGENTPLANE_AUTOMATION_ID).toBe(automationId);
    });

    it('edit delete: a pull request that removes the file', async () => {
      const res = await api.call('POST', `${CI}/edit`, {
        as: member,
        body: { action: 'delete', factoryAutomationId: automationId, repos: [{ repoFullName: 'acme-eng/svc', filePath: '.gitea/workflows/nightly.yaml' }] },
      });
      expect(res.status).toBe(200);
      expect(res.body.sessions[0]).toMatchObject({ prUrl: `${gitea.url}/acme-eng/svc/pulls/2` });
      const files = (await gitea.api('GET', '/repos/acme-eng/svc/pulls/2/files')).body as any[];
      expect(files).toEqual([expect.objectContaining({ filename: '.gitea/workflows/nightly.yaml', status: 'deleted' })]);
    });

    it('jobs: every edit request, newest first, paged, per repository status', async () => {
      const res = await api.call('GET', `${CI}/jobs`, { as: member });
      expect(res.status).toBe(200);
      expect(res.body.jobs.map((j: any) => [j.kind, j.action, j.status])).toEqual([
        ['edit', 'delete', 'succeeded'],
        ['edit', 'edit', 'succeeded'],
        ['edit', 'create', 'partial'],
      ]);
      expect(res.body.jobs[2].repos[2]).toMatchObject({ repoFullName: 'acme-eng/missing', error: expect.any(String) });
      const page = await api.call('GET', `${CI}/jobs?limit=2`, { as: member });
      expect(page.body.pagination.hasMore).toBe(true);
      const next = await api.call('GET', `${CI}/jobs?limit=2&cursor=${page.body.pagination.nextCursor}`, { as: member });
      expect(next.body.jobs.map((j: any) => j.action)).toEqual(['create']);
      expect((await api.call('GET', `${CI}/jobs`, { as: api.globex.members.owner.apiKey })).body.jobs).toEqual([]);
    });

    it('runs: the forge’s runs of the automation’s workflow, with their state', async () => {
      // The workflow is on main now: a pull request makes Gitea queue a run (no runner here: it waits).
      await gitea.commitFiles(alice, 'alice/app', { 'src/a.txt': 'change\n' }, { branch: 'feature-a' });
      const pr = await gitea.api('POST', '/repos/alice/app/pulls', { as: alice, body: { title: 'feature a', head: 'feature-a', base: 'main' } });
      expect(pr.status).toBe(201);
      const res = await waitForRuns(api, member, 1);
      expect(res.runs[0]).toMatchObject({
        repoFullName: 'alice/app',
        workflowPath: '.github/workflows/agentplane-review-bot.yml',
        automationId,
        event: 'pull_request',
        pullRequests: [pr.body.number],
        url: expect.stringContaining(`${gitea.url}/alice/app/actions/runs/`),
      });
      expect(['queued', 'waiting', 'pending', 'in_progress']).toContain(res.runs[0].status);
      expect(res.failures).toEqual([]);
    });
  });
});

describe.skipIf(skip)('readiness evaluations and wiki runs of private repositories', () => {
  let gitea: Gitea;
  let api: TestApi;
  let carol: GiteaUser;
  beforeAll(async () => {
    gitea = await startGitea(bin!);
    carol = await gitea.createUser('carol');
    await gitea.createRepo(carol, { name: 'secret', private: true, files: { 'AGENTS.md': '# agents\n' } });
    api = await startTestApi('pglite', { env: ALLOW_LOOPBACK, worker: true });
    const made = await api.call('POST', SOURCE_CONTROL, {
      as: api.acme.members.owner.apiKey,
      body: { provider: 'gitea', baseUrl: gitea.url, token: carol.token },
    });
    expect(made.status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await api?.close();
    await gitea?.stop();
  });

  const evaluate = async (as: string) => {
    const res = await api.call('POST', '/api/organization/agent-readiness-reports/evaluate', { as, body: { repoUrl: `${gitea.url}/carol/secret.git` } });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    let evaluation: any;
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 250))) {
      evaluation = (await api.call('GET', `/api/organization/agent-readiness-reports/evaluations/${res.body.evaluationId}`, { as })).body;
      if (evaluation.status === 'succeeded' || evaluation.status === 'failed') break;
    }
    return evaluation;
  };

  it('clone with the organization’s connection to the forge; without one the clone is refused', async () => {
    expect(await evaluate(api.acme.members.user.apiKey)).toMatchObject({ status: 'succeeded' });
    const refused = await evaluate(api.globex.members.user.apiKey);
    expect(refused.status).toBe('failed');
    expect(refused.error).toMatch(/cloning .*carol\/secret\.git.* failed/);
    expect(JSON.stringify(refused)).not.toContain('Basic ');
  });

  it('a wiki-refresh run (a push to the default branch) creates a wiki run that clones with the connection', async () => {
    const automationId = crypto.randomUUID();
    await api.db.prisma.ciAutomation.create({ data: { id: automationId, organizationId: api.acme.id, name: 'Wiki', modeId: 'wiki-refresh' } });
    const started = await api.call('POST', `${CI}/jobs`, {
      as: api.acme.serviceAccount.apiKey,
      body: { automationId, repoFullName: 'carol/secret', event: 'push', ref: 'refs/heads/main', sha: 'a'.repeat(40) },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body).toMatchObject({
      status: 'wiki',
      modeId: 'wiki-refresh',
      detail: expect.stringMatching(/^wiki run .* queued for carol\/secret at main$/),
    });
    const wikiRunId = started.body.wikiRunId as string;
    let run: any;
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 250))) {
      run = (await api.call('GET', `/api/v0/wiki/${wikiRunId}`, { as: api.acme.members.owner.apiKey })).body;
      if (run.status === 'succeeded' || run.status === 'failed') break;
    }
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'succeeded', repoUrl: `${gitea.url}/carol/secret.git`, branch: 'main' });
    expect(run.pageCount).toBeGreaterThan(0);
    const jobs = (await api.call('GET', `${CI}/jobs`, { as: api.acme.members.owner.apiKey })).body;
    expect(jobs.jobs.find((j: any) => j.detail?.wikiRunId === wikiRunId)).toMatchObject({ status: 'succeeded', modeId: 'wiki-refresh' });
  });

  it('a connection whose token the forge no longer accepts: 502 with the forge’s own reason', async () => {
    const revoke = await fetch(`${gitea.url}/api/v1/users/carol/tokens/agentplane`, {
      method: 'DELETE',
      headers: { authorization: `Basic ${Buffer.from(`carol:${carol.password}`).toString('base64')}` },
    });
    expect(revoke.status).toBe(204);
    for (const path of [`${CI}/repository-owners`, `${CI}/repositories`, `${CI}/scan?forceRefresh=true`]) {
      const res = await api.call('GET', path, { as: api.acme.members.user.apiKey });
      expect(res.status, path).toBe(502);
      expect(res.body.detail).toContain(`The forge at ${gitea.url} failed`);
      expect(res.body.detail).toContain('token was refused');
      expect(res.body.metadata.forgeStatus).toBe(401);
    }
  });
});

async function waitForRuns(api: TestApi, as: string, n: number) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await api.call('GET', `${CI}/runs`, { as });
    if (res.status !== 200) throw new Error(`runs: ${res.status} ${JSON.stringify(res.body)}`);
    if (res.body.runs.length >= n || Date.now() > deadline) return res.body;
    await new Promise((r) => setTimeout(r, 250));
  }
}
