import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';
import { GO_MODULE, PYTHON_PACKAGE, TS_MONOREPO } from '../support/wiki-fixtures.ts';
import { unzip, waitForRun } from '../support/wiki.ts';
import { git, useFixtureRepos, writeFiles } from '../unit/readiness/fixture-repo.ts';
import { startGitHttpServer } from '../unit/readiness/git-http-server.ts';

const ERROR_KEYS = ['detail', 'status', 'title'];

/** The label of the Mermaid edge between two directories of a page's import graph, if it has one. */
function edge(markdown: string, from: string, to: string): string | undefined {
  const id = (dir: string) => new RegExp(`(n\\d+)\\["${dir.replace(/\//g, '\\/')}"\\]`).exec(markdown)?.[1];
  const [a, b] = [id(from), id(to)];
  return a && b ? new RegExp(`${a} -->\\|"([^"]+)"\\| ${b}\\b`).exec(markdown)?.[1] : undefined;
}

describe.each(BACKENDS)('wiki runs on %s', (backend) => {
  const fixtures = useFixtureRepos();
  let api: TestApi;
  let gitServer: Awaited<ReturnType<typeof startGitHttpServer>>;
  let user: string;
  let tsRun: any;
  let tsRepo: { dir: string; url: string };

  beforeAll(async () => {
    api = await startTestApi(backend, { worker: true, env: ALLOW_LOOPBACK });
    gitServer = await startGitHttpServer(fixtures.root);
    user = api.acme.members.user.apiKey;
    const made = fixtures.make(TS_MONOREPO);
    tsRepo = { dir: made.dir, url: gitServer.publish(made.dir, 'ts-monorepo') };
    const created = await api.call('POST', '/api/v0/wiki', { as: user, body: { repoUrl: tsRepo.url, branch: 'main' } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ status: 'queued', source: 'generate', privacy: 'organization', repoUrl: tsRepo.url, pageCount: 0 });
    tsRun = await waitForRun(api, created.body.wikiRunId, user);
  }, 120_000);
  afterAll(async () => {
    await gitServer?.close();
    await api?.close();
  });

  const page = async (runId: string, pageId: string, as = user) => {
    const res = await api.call('GET', `/api/v0/wiki/${runId}/pages/${pageId}`, { as });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };

  function expectError(res: { status: number; body: any }, status: number, detail?: RegExp) {
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(
      Object.keys(res.body)
        .filter((k) => k !== 'metadata')
        .sort(),
    ).toEqual(ERROR_KEYS);
    if (detail) expect(res.body.detail).toMatch(detail);
  }

  describe('generation of a TypeScript monorepo', () => {
    it('succeeds with the page tree readers expect', () => {
      expect(tsRun.status, tsRun.error).toBe('succeeded');
      expect(tsRun.commitHash).toBe(git(tsRepo.dir, 'rev-parse', 'HEAD').trim());
      expect(tsRun.branch).toBe('main');
      const paths = tsRun.pages.map((p: any) => p.path);
      expect(paths.slice(0, 6)).toEqual(['overview', 'overview/architecture', 'overview/getting-started', 'overview/glossary', 'by-the-numbers', 'packages']);
      expect(paths).toEqual(
        expect.arrayContaining([
          'packages/packages-ssh-src',
          'packages/apps-api-src',
          'packages/apps-api-src-routes',
          'reference',
          'reference/configuration',
          'reference/data-models',
          'reference/dependencies',
        ]),
      );
      expect(tsRun.pageCount).toBe(paths.length);
      expect(tsRun.pagesGenerated + tsRun.pagesReused).toBe(tsRun.pageCount);
      for (const p of tsRun.pages) expect(p.path.split('/').length).toBeLessThanOrEqual(2);
      expect(tsRun.pages.find((p: any) => p.path === 'overview/architecture').parentId).toBe('overview');
    });

    it('writes a module page from the survey: purpose, key abstractions, import graph, cited blobs, working links', async () => {
      const ssh = await page(tsRun.wikiRunId, 'packages.packages-ssh-src');
      expect(ssh.markdown).toContain('## Key abstractions');
      expect(ssh.markdown).toMatch(
        /\| `createSshClient` \| function \| `packages\/ssh\/src\/client.ts`:10 \| Creates an SSH client that reuses connections from one pool per host\. \|/,
      );
      expect(ssh.markdown).toMatch(/`ConnectionPool` \| class/);
      expect(ssh.markdown).toContain('```mermaid');
      // The API imports the SSH package through its workspace name: a real edge of the graph.
      expect(edge(ssh.markdown, 'apps/api/src', 'packages/ssh/src')).toBe('1 import');
      expect(ssh.markdown).toContain('SSH connections with pooling and keepalive');
      expect(ssh.markdown).toMatch(/### Used by/);
      const blob = git(tsRepo.dir, 'rev-parse', 'HEAD:packages/ssh/src/client.ts').trim();
      expect(ssh.sources).toEqual(expect.arrayContaining([{ path: 'packages/ssh/src/client.ts', blobSha: blob, lines: expect.arrayContaining([[10, 13]]) }]));
      expect(ssh.linksOut.map((l: any) => l.pageId)).toEqual(expect.arrayContaining(['packages', 'overview.architecture', 'packages.apps-api-src']));
      expect(ssh.linksIn.map((l: any) => l.pageId)).toEqual(expect.arrayContaining(['packages', 'packages.apps-api-src']));
      for (const p of tsRun.pages) {
        const body = (await page(tsRun.wikiRunId, p.pageId)).markdown as string;
        expect(body, p.path).not.toMatch(/TODO|TBD|lorem|placeholder|\{\{/i);
        expect(body.length, p.path).toBeGreaterThan(80);
      }
    });

    it('names every directory without a page and why, and reads manifests, CI and configuration', async () => {
      const lens = await page(tsRun.wikiRunId, 'packages');
      expect(lens.markdown).toMatch(/`apps\/api\/test`: skipped because it holds only 6 lines of code/);
      expect(lens.markdown).toContain('`@acme/ssh`');
      const start = await page(tsRun.wikiRunId, 'overview.getting-started');
      expect(start.markdown).toContain('`npm run test`');
      expect(start.markdown).toMatch(/\.github\/workflows\/ci\.yml` \| GitHub Actions \| test, lint/);
      const config = await page(tsRun.wikiRunId, 'reference.configuration');
      expect(config.markdown).toMatch(/`BUILD_HOST` \| `apps\/api\/src\/routes\/builds.ts`/);
      expect(config.markdown).toMatch(/`PORT`/);
      const deps = await page(tsRun.wikiRunId, 'reference.dependencies');
      expect(deps.markdown).toMatch(/`ssh2` \| `1.17.0` \| runtime \| 1 \|/);
      const overview = await page(tsRun.wikiRunId, 'overview');
      expect(overview.markdown).toContain('Acme platform runs remote builds over SSH');
    });
  });

  describe('search', () => {
    it('finds an identifier by its words and ranks its defining page first, with highlighted snippets', async () => {
      const res = await api.call('GET', `/api/v0/wiki/${tsRun.wikiRunId}/search?q=${encodeURIComponent('ssh client')}`, { as: user });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.results.length).toBeGreaterThan(1);
      for (const q of ['createSshClient', 'create_ssh_client', '"create ssh client"', 'createSsh*']) {
        const hit = await api.call('GET', `/api/v0/wiki/${tsRun.wikiRunId}/search?q=${encodeURIComponent(q)}`, { as: user });
        expect(hit.status, q).toBe(200);
        expect(hit.body.results[0]?.pageId, q).toBe('packages.packages-ssh-src');
      }
      const exact = await api.call('GET', `/api/v0/wiki/${tsRun.wikiRunId}/search?q=createSshClient`, { as: user });
      expect(exact.body.results[0].definesSymbol).toBe(true);
      expect(exact.body.results[0].snippet).toMatch(/<mark>createSshClient<\/mark>/);
      expect(exact.body.results.slice(1).every((r: any) => !r.definesSymbol)).toBe(true);
    });

    it('answers phrase and prefix queries and refuses empty ones', async () => {
      const prefix = await api.call('GET', `/api/v0/wiki/${tsRun.wikiRunId}/search?q=keepal*`, { as: user });
      expect(prefix.body.results.map((r: any) => r.pageId)).toContain('packages.packages-ssh-src');
      const phrase = await api.call('GET', `/api/v0/wiki/${tsRun.wikiRunId}/search?q=${encodeURIComponent('"pool per host"')}`, { as: user });
      expect(phrase.body.results[0]?.pageId).toBe('packages.packages-ssh-src');
      const reversed = await api.call('GET', `/api/v0/wiki/${tsRun.wikiRunId}/search?q=${encodeURIComponent('"host per pool"')}`, { as: user });
      expect(reversed.body.results).toEqual([]);
      expectError(await api.call('GET', `/api/v0/wiki/${tsRun.wikiRunId}/search?q=`, { as: user }), 400, /q: must not be empty/);
      expectError(await api.call('GET', `/api/v0/wiki/${tsRun.wikiRunId}/search?q=${encodeURIComponent('&&')}`, { as: user }), 400, /nothing to search for/);
    });
  });

  describe('export', () => {
    it('streams a zip laid out by the tree with index.md and .wiki-meta.json', async () => {
      const res = await fetch(`${api.url}/api/v0/wiki/${tsRun.wikiRunId}/export`, { headers: { authorization: `Bearer ${user}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/zip');
      const files = await unzip(Buffer.from(await res.arrayBuffer()));
      const meta = JSON.parse(files.get('.wiki-meta.json')!);
      expect(meta).toEqual({
        generatedAt: expect.any(String),
        pageCount: tsRun.pageCount,
        topLevelSections: ['overview', 'by-the-numbers', 'packages', 'reference'],
        pageOrder: tsRun.pages.map((p: any) => p.path),
      });
      expect(files.get('index.md')).toContain('- [Overview](overview/index.md)');
      expect(files.has('overview/index.md')).toBe(true);
      expect(files.has('overview/architecture.md')).toBe(true);
      expect(files.has('by-the-numbers.md')).toBe(true);
      expect(files.get('packages/packages-ssh-src.md')).toBe((await page(tsRun.wikiRunId, 'packages.packages-ssh-src')).markdown);
      expect(files.size).toBe(tsRun.pageCount + 2);
      // Every relative link in the export reaches a file of the export.
      for (const [name, body] of files) {
        for (const m of body.matchAll(/\]\(([^)#]+\.md)\)/g)) {
          const target = new URL(m[1]!, `file:///${name}`).pathname.slice(1);
          expect(files.has(target), `${name} -> ${m[1]}`).toBe(true);
        }
      }
    });
  });

  describe('other languages', () => {
    it('documents a Python package and a Go module from their own parsers', async () => {
      const py = fixtures.make(PYTHON_PACKAGE);
      const go = fixtures.make(GO_MODULE);
      const runs = await Promise.all(
        [gitServer.publish(py.dir, 'ledger'), gitServer.publish(go.dir, 'shortener')].map(async (repoUrl) => {
          const created = await api.call('POST', '/api/v0/wiki', { as: user, body: { repoUrl } });
          return waitForRun(api, created.body.wikiRunId, user);
        }),
      );
      for (const r of runs) expect(r.status, r.error).toBe('succeeded');
      const ledger = await page(runs[0].wikiRunId, 'systems.src-ledger');
      expect(ledger.markdown).toContain('Double-entry bookkeeping: accounts, postings and balances.');
      expect(ledger.markdown).toMatch(/`transfer` \| function \| `src\/ledger\/accounts.py`:16 \| Moves amount from source to target as two postings\./);
      expect(ledger.markdown).toMatch(/`Account` \| class/);
      // One directory gives no directory graph: the architecture diagram is drawn by files instead.
      const pyArchitecture = await page(runs[0].wikiRunId, 'overview.architecture');
      expect(pyArchitecture.markdown).toContain('most connected files; each edge counts the import statements from one file into the other');
      for (const file of ['src/ledger/__init__.py', 'src/ledger/accounts.py', 'src/ledger/storage.py', 'src/ledger/cli.py'])
        expect(pyArchitecture.markdown).toContain(`["${file}"]`);
      const pyConfig = await page(runs[0].wikiRunId, 'reference.configuration');
      expect(pyConfig.markdown).toContain('`LEDGER_DB`');
      const store = await page(runs[1].wikiRunId, 'systems.internal-store');
      expect(store.markdown).toContain('Package store keeps short codes and their target URLs.');
      expect(store.markdown).toMatch(/`MemoryStore.Get` \| method/);
      expect(edge(store.markdown, 'internal/httpapi', 'internal/store')).toBe('1 import');
      expect(edge(store.markdown, 'cmd/shortener', 'internal/store')).toBe('1 import');
      const goDeps = await page(runs[1].wikiRunId, 'reference.dependencies');
      expect(goDeps.markdown).toContain('`github.com/go-chi/chi/v5`');
    });

    it('fails a run over a size bound, naming the bound', async () => {
      const bounded = await startTestApi(backend, { worker: true, env: { ...ALLOW_LOOPBACK, AGENTPLANE_WIKI_MAX_FILES: '3' } });
      try {
        const created = await bounded.call('POST', '/api/v0/wiki', { as: bounded.acme.members.user.apiKey, body: { repoUrl: tsRepo.url } });
        const run = await waitForRun(bounded, created.body.wikiRunId, bounded.acme.members.user.apiKey);
        expect(run.status).toBe('failed');
        expect(run.error).toMatch(/has 1\d files at HEAD, more than AGENTPLANE_WIKI_MAX_FILES \(3\)/);
      } finally {
        await bounded.close();
      }
    });

    it('fails a run whose repository cannot be cloned, with the reason', async () => {
      const created = await api.call('POST', '/api/v0/wiki', { as: user, body: { repoUrl: `${gitServer.url}/missing.git` } });
      const run = await waitForRun(api, created.body.wikiRunId, user);
      expect(run.status).toBe('failed');
      expect(run.error).toMatch(/cloning .*missing\.git.* failed/);
    });
  });

  describe('incremental runs', () => {
    it('reuses the pages whose cited files are unchanged and regenerates the rest', async () => {
      writeFiles(tsRepo.dir, {
        'packages/ssh/src/pool.ts': `${TS_MONOREPO['packages/ssh/src/pool.ts']}\n/** How long a pooled connection may idle. */\nexport const IDLE_MS = 30_000;\n`,
      });
      git(tsRepo.dir, 'commit', '-qam', 'idle bound');
      gitServer.publish(tsRepo.dir, 'ts-monorepo');
      const created = await api.call('POST', '/api/v0/wiki', { as: user, body: { repoUrl: tsRepo.url, branch: 'main' } });
      const run = await waitForRun(api, created.body.wikiRunId, user);
      expect(run.status, run.error).toBe('succeeded');
      expect(run.baseRunId).toBe(tsRun.wikiRunId);
      // The routes page cites only its own files and the API's, none changed; the SSH page cites pool.ts.
      const routes = await page(run.wikiRunId, 'packages.apps-api-src-routes');
      expect(routes.reused).toBe(true);
      const ssh = await page(run.wikiRunId, 'packages.packages-ssh-src');
      expect(ssh.reused).toBe(false);
      expect(ssh.markdown).toContain('`IDLE_MS`');
      expect(run.pagesReused).toBeGreaterThanOrEqual(1);
      expect(run.pagesReused + run.pagesGenerated).toBe(run.pageCount);
      const history = await api.call('GET', `/api/v0/wiki/history/${encodeURIComponent(tsRepo.url)}`, { as: user });
      expect(history.body.wikiRuns.map((r: any) => r.wikiRunId).slice(0, 2)).toEqual([run.wikiRunId, tsRun.wikiRunId]);
    });
  });
});
