import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { syncGitIntegrations } from '../../src/modules/integrations/seed.ts';
import { credentialForRepository } from '../../src/modules/integrations/connections.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { startGitHubFake, type GitHubFake } from '../support/github-fake.ts';
import { BACKENDS } from '../support/test-db.ts';

const CI = '/api/v0/automations/ci';

/**
 * The GitHub adapter on GitHub's wire: github.com cannot be reached here, so a wire-level fake
 * from the test support (the only one) stands in for a GitHub Enterprise Server.
 */
describe.each(BACKENDS)('CI automations on GitHub (wire-level fake of its REST API), on %s', (backend) => {
  let gh: GitHubFake;
  let api: TestApi;
  let owner: string;

  beforeAll(async () => {
    gh = await startGitHubFake({ login: 'octo' });
    gh.addOrg('octo-org');
    // More repositories than one page of 100: the adapter must follow the Link header.
    for (let i = 0; i < 103; i++) gh.addRepo(`octo-org/r${String(i).padStart(3, '0')}`);
    gh.addRepo('octo/site', { files: { '.github/workflows/ci.yml': 'name: CI\non:\n  push:\n    branches: [main]\njobs: {}\n' } });
    gh.addRepo('octo/readonly', { canPush: false });
    gh.addRepo('octo/frozen', { archived: true });
    api = await startTestApi(backend, { env: ALLOW_LOOPBACK });
    owner = api.acme.members.owner.apiKey;
  });
  afterAll(async () => {
    await api?.close();
    await gh?.close();
  });

  it('create: verifies with GET /user; a refused token is a 400 carrying GitHub’s "Bad credentials"', async () => {
    const bad = await api.call('POST', '/api/v0/integrations/source-control', { as: owner, body: { provider: 'github', baseUrl: gh.url, token: 'ghp_wrong' } });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain('refused the token (401): Bad credentials');
    const res = await api.call('POST', '/api/v0/integrations/source-control', { as: owner, body: { provider: 'github', baseUrl: gh.url, token: gh.token } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ provider: 'github', login: 'octo', scopes: ['repo', 'workflow'] });
    const call = gh.requests.find((r) => r.path === '/api/v3/user' && r.headers.authorization === `Bearer ${gh.token}`)!;
    expect(call.headers).toMatchObject({ accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', 'user-agent': 'agentplane' });
  });

  it('owners and repositories, paged through Link headers to the end', async () => {
    const owners = await api.call('GET', `${CI}/repository-owners`, { as: owner });
    expect(owners.body.owners).toEqual([
      { login: 'octo', type: 'User' },
      { login: 'octo-org', type: 'Organization' },
    ]);
    const repos = await api.call('GET', `${CI}/repositories`, { as: owner });
    expect(repos.body.repositories).toHaveLength(104);
    expect(repos.body.repositories.map((r: any) => r.repoFullName)).not.toContain('octo/readonly');
    expect(repos.body.repositories.map((r: any) => r.repoFullName)).not.toContain('octo/frozen');
    expect(gh.requests.filter((r) => r.path.startsWith('/api/v3/user/repos')).map((r) => new URL(r.path, 'http://x').searchParams.get('page'))).toContain('2');
    const mine = await api.call('GET', `${CI}/repositories?owner=octo`, { as: owner });
    expect(mine.body.repositories.map((r: any) => r.repoFullName)).toEqual(['octo/site']);
  });

  it('scan reads .github/workflows only', async () => {
    const res = await api.call('GET', `${CI}/scan`, { as: owner });
    expect(res.body.workflows).toEqual([
      { repoFullName: 'octo/site', filePath: '.github/workflows/ci.yml', workflowName: 'CI', triggerEvents: ['push'], droidActionInputs: {} },
    ]);
    expect(res.body.failures).toEqual([]);
    expect(res.body.repositoriesScanned).toBe(104);
  });

  let automationId: string;
  it('edit: creates the ref, commits the file on it, opens the pull request; a run comments on it', async () => {
    const res = await api.call('POST', `${CI}/edit`, {
      as: owner,
      body: {
        action: 'create',
        modeId: 'custom',
        automationName: 'Weekly',
        repos: [{ repoFullName: 'octo/site' }],
        changes: { customPrompt: 'Summarise the week', schedule: '0 9 * * 1', githubEvents: ['comment-added'] },
      },
    });
    expect(res.status).toBe(200);
    automationId = res.body.factoryAutomationId;
    expect(res.body.sessions[0]).toMatchObject({ filePath: '.github/workflows/agentplane-weekly.yml', prUrl: `${gh.url}/octo/site/pull/1` });
    const [pr] = gh.pulls('octo/site');
    const doc = YAML.parse(gh.fileAt('octo/site', pr!.head, '.github/workflows/agentplane-weekly.yml')!);
    expect(doc.on).toEqual({ issue_comment: { types: ['created'] }, schedule: [{ cron: '0 9 * * 1' }], workflow_dispatch: null });
    expect(doc.jobs.agentplane.env.AGENTPLANE_PROMPT).toBe('Summarise the week');
    expect(gh.fileAt('octo/site', 'main', '.github/workflows/agentplane-weekly.yml')).toBeUndefined();

    // What `agentplane ci run` does from the workflow, here without a computer (no session).
    await api.db.prisma.ciAutomation.update({ where: { id: automationId }, data: { computerId: 'cmp_none' } });
    const start = await api.call('POST', `${CI}/jobs`, {
      as: owner,
      body: { automationId, repoFullName: 'octo/site', event: 'issue_comment', pullRequestNumber: 1 },
    });
    expect(start.status).toBe(200);
    expect(start.body).toMatchObject({ status: 'running', modeId: 'custom', computerId: 'cmp_none' });
    expect(start.body.prompt).toContain('Summarise the week');
    expect(start.body.prompt).toContain('+name: Weekly');
    const done = await api.call('POST', `${CI}/jobs/${start.body.jobId}/complete`, {
      as: owner,
      body: { conclusion: 'success', result: 'All quiet this week.' },
    });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      status: 'succeeded',
      repos: [{ repoFullName: 'octo/site', pullRequest: 1, commentUrl: expect.stringContaining('#issuecomment-') }],
    });
    expect(gh.comments('octo/site', 1)[0]!.body).toContain('All quiet this week.');
    expect((await api.call('POST', `${CI}/jobs/${start.body.jobId}/complete`, { as: owner, body: { conclusion: 'success' } })).status).toBe(409);
  });

  it('runs: GitHub-shaped runs of the automation’s file only', async () => {
    const at = '2026-11-20T10:00:00Z';
    gh.addRun('octo/site', {
      id: 7,
      name: 'CI',
      path: '.github/workflows/ci.yml',
      event: 'push',
      status: 'completed',
      conclusion: 'success',
      created_at: at,
      updated_at: at,
      html_url: 'x',
    });
    gh.addRun('octo/site', {
      id: 8,
      name: 'Weekly',
      path: '.github/workflows/agentplane-weekly.yml',
      event: 'schedule',
      status: 'completed',
      conclusion: 'failure',
      head_branch: 'main',
      head_sha: 'abc',
      created_at: '2026-11-21T10:00:00Z',
      updated_at: '2026-11-21T10:05:00Z',
      run_started_at: '2026-11-21T10:00:05Z',
      html_url: `${gh.url}/octo/site/actions/runs/8`,
      pull_requests: [],
    });
    const res = await api.call('GET', `${CI}/runs`, { as: owner });
    expect(res.body.runs).toEqual([
      {
        id: 8,
        repoFullName: 'octo/site',
        workflowPath: '.github/workflows/agentplane-weekly.yml',
        automationId,
        name: 'Weekly',
        status: 'completed',
        conclusion: 'failure',
        event: 'schedule',
        branch: 'main',
        headSha: 'abc',
        pullRequests: [],
        url: `${gh.url}/octo/site/actions/runs/8`,
        createdAt: Date.parse('2026-11-21T10:00:00Z'),
        updatedAt: Date.parse('2026-11-21T10:05:00Z'),
        startedAt: Date.parse('2026-11-21T10:00:05Z'),
        completedAt: null,
      },
    ]);
  });
});

describe('connections seeded from AGENTPLANE_GIT_INTEGRATIONS', () => {
  it('seeding keeps connections made through the API, and credentials are found by repository URL', async () => {
    const gh = await startGitHubFake();
    const api = await startTestApi('pglite', { env: ALLOW_LOOPBACK });
    try {
      const made = await api.call('POST', '/api/v0/integrations/source-control', {
        as: api.acme.members.owner.apiKey,
        body: { provider: 'github', baseUrl: gh.url, token: gh.token },
      });
      expect(made.status).toBe(201);
      await syncGitIntegrations(api.db.prisma, api.machines.secrets, [
        { organization: 'acme', host: 'git.example.com', username: 'bot', token: 'seeded-token-1234' },
      ]);
      const list = (await api.call('GET', '/api/v0/integrations/source-control', { as: api.acme.members.manager.apiKey })).body.integrations;
      expect(list.map((i: any) => [i.host, i.provider, i.origin, i.token])).toEqual([
        [new URL(gh.url).host, 'github', 'api', `••••••••${gh.token.slice(-4)}`],
        ['git.example.com', 'gitea', 'config', '••••••••1234'],
      ]);
      const cred = await credentialForRepository(api.db.prisma, api.machines.secrets, api.acme.id, 'https://git.example.com/team/repo.git');
      expect(cred).toMatchObject({ username: 'bot', token: 'seeded-token-1234', baseUrl: 'https://git.example.com' });
      expect(await credentialForRepository(api.db.prisma, api.machines.secrets, api.acme.id, 'git@elsewhere.example:team/repo.git')).toBeUndefined();
      await syncGitIntegrations(api.db.prisma, api.machines.secrets, []);
      const after = (await api.call('GET', '/api/v0/integrations/source-control', { as: api.acme.members.owner.apiKey })).body.integrations;
      expect(after.map((i: any) => i.origin)).toEqual(['api']);
      expect((await api.call('DELETE', `/api/v0/integrations/source-control/${made.body.id}`, { as: api.acme.members.user.apiKey })).status).toBe(403);
      expect((await api.call('DELETE', `/api/v0/integrations/source-control/${made.body.id}`, { as: api.acme.members.owner.apiKey })).status).toBe(204);
      expect((await api.call('GET', '/api/v0/integrations/source-control', { as: api.acme.members.owner.apiKey })).body.integrations).toEqual([]);
    } finally {
      await api.close();
      await gh.close();
    }
  });
});

describe('the egress guard and forges on loopback', () => {
  it('refuses a forge on a loopback address unless the operator allows it', async () => {
    const gh = await startGitHubFake();
    const api = await startTestApi('pglite');
    try {
      const res = await api.call('POST', '/api/v0/integrations/source-control', {
        as: api.acme.members.owner.apiKey,
        body: { provider: 'github', baseUrl: gh.url, token: gh.token },
      });
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain(gh.url);
      expect(res.body.detail).toContain('AGENTPLANE_EGRESS_ALLOW');
      expect(gh.requests).toEqual([]);
    } finally {
      await api.close();
      await gh.close();
    }
  });
});
