import { encodePath, forgeList, forgeRequest, type ForgeTransport } from './http.ts';
import { githubShapedCalls, repoPath } from './github-shaped.ts';
import { toRepository } from './shapes.ts';
import type { ForgeClient } from './types.ts';

const PAGE = 100;

/** github.com answers at api.github.com; GitHub Enterprise Server at `<baseUrl>/api/v3`. */
function githubApiUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  if (url.hostname === 'github.com' || url.hostname === 'www.github.com') return 'https://api.github.com';
  return `${baseUrl.replace(/\/+$/, '')}/api/v3`;
}

/** GitHub's REST API (github.com and GitHub Enterprise Server), version 2022-11-28. */
export function githubClient(baseUrl: string, token: string, fetch: typeof globalThis.fetch): ForgeClient {
  const t: ForgeTransport = {
    apiUrl: githubApiUrl(baseUrl),
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
      'user-agent': 'agentplane',
    },
    fetch,
  };
  const shared = githubShapedCalls(t, 'per_page');

  return {
    ...shared,
    provider: 'github',
    workflowDirs: ['.github/workflows'],

    async whoAmI() {
      const res = await forgeRequest<{ login: string }>(t, 'GET', '/user', { what: 'GET /user' });
      const scopes = res.headers.get('x-oauth-scopes');
      // Fine-grained tokens and GitHub App tokens carry no scope header.
      return {
        login: res.body.login,
        scopes:
          scopes === null
            ? null
            : scopes
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean),
      };
    },

    async listOwners() {
      const me = await this.whoAmI();
      const orgs = await forgeList<{ login: string }>(t, `/user/orgs?per_page=${PAGE}`);
      return [{ login: me.login, type: 'User' as const }, ...orgs.map((o) => ({ login: o.login, type: 'Organization' as const }))];
    },

    async listRepositories() {
      return (await forgeList<Record<string, unknown>>(t, `/user/repos?per_page=${PAGE}`)).map(toRepository);
    },

    // GitHub has no "commit onto a new branch" call: the ref is created first, at the base's head.
    async commitOnNewBranch(repo, c) {
      const base = await forgeRequest<{ object: { sha: string } }>(t, 'GET', `${repoPath(repo)}/git/ref/heads/${encodePath(c.base)}`);
      await forgeRequest(t, 'POST', `${repoPath(repo)}/git/refs`, { body: { ref: `refs/heads/${c.branch}`, sha: base.body.object.sha } });
      const url = `${repoPath(repo)}/contents/${encodePath(c.path)}`;
      if (c.content === null) await forgeRequest(t, 'DELETE', url, { body: { message: c.message, sha: c.sha, branch: c.branch } });
      else {
        const content = Buffer.from(c.content, 'utf8').toString('base64');
        await forgeRequest(t, 'PUT', url, { body: { message: c.message, content, branch: c.branch, ...(c.sha ? { sha: c.sha } : {}) } });
      }
    },

    async pullRequestDiff(repo, number) {
      const diff = { ...t, headers: { ...t.headers, accept: 'application/vnd.github.diff' } };
      return String((await forgeRequest<string>(diff, 'GET', `${repoPath(repo)}/pulls/${number}`)).body ?? '');
    },

    async listRuns(repo, limit) {
      return shared.listRuns(repo, Math.min(limit, PAGE));
    },
  };
}
