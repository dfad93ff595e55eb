import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { BACKENDS } from '../support/test-db.ts';
import { PYTHON_PACKAGE } from '../support/wiki-fixtures.ts';
import { waitForRun } from '../support/wiki.ts';
import { useFixtureRepos } from '../unit/readiness/fixture-repo.ts';
import { startGitHttpServer } from '../unit/readiness/git-http-server.ts';

describe.each(BACKENDS)('wiki pages written by a model on %s', (backend) => {
  const fixtures = useFixtureRepos();
  let api: TestApi;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let gitServer: Awaited<ReturnType<typeof startGitHttpServer>>;

  beforeAll(async () => {
    model = await startModelServer();
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    Object.assign(process.env, models.env);
    api = await startTestApi(backend, { worker: true, env: ALLOW_LOOPBACK });
    gitServer = await startGitHttpServer(fixtures.root);
  });
  afterAll(async () => {
    await gitServer?.close();
    await api?.close();
    await model?.close();
    models?.dispose();
  });

  it('writes each page through the agent loop with read-only tools, counts tokens and credits, and degrades a failed page', async () => {
    const repo = fixtures.make(PYTHON_PACKAGE);
    const repoUrl = gitServer.publish(repo.dir, 'ledger-model');
    model.reset();
    // The overview: the model reads outside the checkout (refused), then the README, then writes.
    model.enqueue(
      {
        toolCalls: [
          { name: 'read_file', arguments: { path: '/etc/passwd' } },
          { name: 'read_file', arguments: { path: 'README.md' } },
          { name: 'run_command', arguments: { command: 'id' } },
        ],
      },
      { text: 'Ledger keeps double-entry accounts in SQLite (`README.md`); its command prints one balance (`src/ledger/cli.py:9`).' },
      // The architecture page: the provider refuses the call.
      { error: { status: 400, message: 'unsupported parameter: temperature' } },
    );
    const pageCount = 11;
    for (let i = 2; i < pageCount; i++) model.enqueue({ text: `Accounts are dataclasses holding postings (\`src/ledger/accounts.py\`), page ${i}.` });
    const created = await api.call('POST', '/api/v0/wiki', { as: api.acme.members.user.apiKey, body: { repoUrl, model: 'coder' } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.model).toBe('coder');
    const run = await waitForRun(api, created.body.wikiRunId, api.acme.members.user.apiKey);
    expect(run.status, run.error).toBe('succeeded');
    expect(run.pageCount).toBe(pageCount);
    expect(model.remaining()).toBe(0);

    const get = (id: string) => api.call('GET', `/api/v0/wiki/${run.wikiRunId}/pages/${id}`, { as: api.acme.members.user.apiKey }).then((r) => r.body);
    const overview = await get('overview');
    expect(overview.markdown).toMatch(/^# ledger-model\n\nLedger keeps double-entry accounts in SQLite \(`README.md`\)/);
    expect(overview.degraded).toBeNull();
    expect(overview.sources.map((s: any) => s.path)).toEqual(expect.arrayContaining(['README.md', 'src/ledger/cli.py']));
    // What the tools answered, as the model saw it: no file outside the checkout, no command.
    const toolResults = model.requests[1]!.body.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
    expect(toolResults[0]).toMatch(/outside the repository/);
    expect(toolResults[1]).toContain('Ledger keeps double-entry accounts in SQLite');
    expect(toolResults[2]).toMatch(/run_command|unknown tool|not available/i);
    expect(model.requests[0]!.body.tools!.map((t) => t.function.name).sort()).toEqual(['glob', 'list_directory', 'read_file', 'search_text']);

    const architecture = await get('overview.architecture');
    expect(architecture.degraded).toMatch(/the model call failed: .*unsupported parameter: temperature/);
    expect(architecture.markdown).toMatch(
      /^# Architecture\n\n> The model did not write this page \(the model call failed: .*\); this is the survey's version\./,
    );
    expect(architecture.markdown).toContain('The code is organised in 1 directory');

    // 11 answered calls (two for the overview, one for each of nine more pages) of 100 input and 10 output tokens at 1000 and 5000 credits per million.
    expect(run.tokenUsage).toEqual({
      inputTokens: 1100,
      outputTokens: 110,
      cacheCreationTokens: 0,
      cacheReadTokens: 0,
      thinkingTokens: 0,
      serviceCredits: 1.65,
    });
    const events = await api.db.prisma.$queryRaw<{ n: bigint; credits: number }[]>`
      SELECT count(*) AS n, sum(service_credits)::float8 AS credits FROM analytics_events WHERE kind = 'token_usage' AND organization_id = ${api.acme.id} AND model = 'coder'`;
    expect(Number(events[0]!.n)).toBe(11);
    expect(events[0]!.credits).toBeCloseTo(1.65);
  });

  it('degrades every page with the reason when the model cannot be called, and the run still succeeds', async () => {
    const repo = fixtures.make(PYTHON_PACKAGE);
    const repoUrl = gitServer.publish(repo.dir, 'ledger-nokey');
    const key = process.env[CODER_KEY_ENV];
    delete process.env[CODER_KEY_ENV];
    try {
      const created = await api.call('POST', '/api/v0/wiki', { as: api.acme.members.user.apiKey, body: { repoUrl, model: 'coder' } });
      const run = await waitForRun(api, created.body.wikiRunId, api.acme.members.user.apiKey);
      expect(run.status, run.error).toBe('succeeded');
      const page = await api.call('GET', `/api/v0/wiki/${run.wikiRunId}/pages/systems.src-ledger`, { as: api.acme.members.user.apiKey });
      expect(page.body.degraded).toMatch(new RegExp(`${CODER_KEY_ENV}.*is not set`));
    } finally {
      process.env[CODER_KEY_ENV] = key;
    }
  });
});
