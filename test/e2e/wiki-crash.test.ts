import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOW_LOOPBACK } from '../support/api.ts';
import { createTestDatabase } from '../support/databases.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { BACKENDS } from '../support/test-db.ts';
import { seedDataDir } from '../support/pglite-template.ts';
import { waitFor } from '../support/wait.ts';
import { PYTHON_PACKAGE } from '../support/wiki-fixtures.ts';
import { useFixtureRepos } from '../unit/readiness/fixture-repo.ts';
import { startGitHttpServer } from '../unit/readiness/git-http-server.ts';

/**
 * The control plane killed with SIGKILL while a wiki run waits on the model for its second page,
 * then started again: the generation job comes back once its heartbeat is missed, resumes from the
 * run's checkpoint (the first page is not written twice) and the run succeeds.
 */
describe.each(BACKENDS)('a control-plane crash mid wiki run on %s', (backend) => {
  const fixtures = useFixtureRepos();
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let gitServer: Awaited<ReturnType<typeof startGitHttpServer>>;
  let env: Record<string, string>;
  let server: ServerProcess | undefined;
  let drop: (() => Promise<void>) | undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-wiki-crash-'));

  beforeAll(async () => {
    model = await startModelServer();
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    gitServer = await startGitHttpServer(fixtures.root);
    env = { ...models.env, ...ALLOW_LOOPBACK, AGENTPLANE_DATA_DIR: dataDir };
    if (backend === 'postgres') {
      const created = await createTestDatabase();
      env.DATABASE_URL = created.url;
      drop = created.drop;
    } else seedDataDir(dataDir);
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await drop?.();
    await gitServer?.close();
    models?.dispose();
    await model?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('resumes the run from its checkpoint after kill -9', { timeout: 150_000 }, async () => {
    const repoUrl = gitServer.publish(fixtures.make(PYTHON_PACKAGE).dir, 'ledger-crash');
    server = await startServerProcess(env);
    const key = server.firstStartKey!;
    const call = async (url: string, method: string, p: string, body?: unknown) => {
      const res = await fetch(`${url}${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const prose = (n: number) => ({ text: `Accounts hold postings (\`src/ledger/accounts.py\`), page ${n}.` });
    // Page 1 answers; page 2's answer streams slowly, and the process is killed during it.
    model.enqueue(prose(1), { ...prose(2), chunkSize: 2, chunkDelayMs: 1_000 });
    const created = await call(server.url, 'POST', '/api/v0/wiki', { repoUrl, model: 'coder' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.wikiRunId as string;
    await waitFor('the second page to be asked for', () => model.requests.length >= 2, 60_000, 50);

    expect(await server.stop('SIGKILL')).toBeNull();
    for (let n = 2; n <= 11; n++) model.enqueue(prose(n));
    server = await startServerProcess(env);
    const run = await waitFor(
      'the resumed run to settle',
      async () => {
        const res = await call(server!.url, 'GET', `/api/v0/wiki/${id}`);
        return res.body.status === 'succeeded' || res.body.status === 'failed' ? res.body : undefined;
      },
      90_000,
      250,
    );
    expect(run.status, run.error).toBe('succeeded');
    expect(run.pageCount).toBe(11);
    const briefs = model.requests.map((r) => JSON.stringify(r.body.messages.find((m) => m.role === 'user')?.content ?? ''));
    // The first page was written once, before the crash; the second was asked for again after it.
    expect(briefs.filter((b) => b.includes('(overview)')).length).toBe(1);
    expect(briefs.filter((b) => b.includes('(overview/architecture)')).length).toBe(2);
    expect(model.remaining()).toBe(0);
    const overview = await call(server.url, 'GET', `/api/v0/wiki/${id}/pages/overview`);
    expect(overview.body.markdown).toContain('page 1.');
    expect(overview.body.degraded).toBeNull();
  });
});
