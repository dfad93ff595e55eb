import { encodePath, forgeList, forgeRequest, type ForgeTransport } from './http.ts';
import { githubShapedCalls, repoPath } from './github-shaped.ts';
import { toRepository } from './shapes.ts';
import type { ForgeClient } from './types.ts';

/** Gitea's page size cap (MAX_RESPONSE_ITEMS defaults to 50). */
const PAGE = 50;

/** Gitea and Forgejo, at `<baseUrl>/api/v1`. */
export function giteaClient(baseUrl: string, token: string, fetch: typeof globalThis.fetch): ForgeClient {
  const t: ForgeTransport = {
    apiUrl: `${baseUrl.replace(/\/+$/, '')}/api/v1`,
    headers: { authorization: `token ${token}`, accept: 'application/json' },
    fetch,
  };
  const shared = githubShapedCalls(t, 'limit');

  return {
    ...shared,
    provider: 'gitea',
    // Forgejo reads .forgejo/workflows first, Gitea .gitea/workflows; both fall back to .github/workflows.
    workflowDirs: ['.forgejo/workflows', '.gitea/workflows', '.github/workflows'],

    async whoAmI() {
      const res = await forgeRequest<{ login: string }>(t, 'GET', '/user', { what: 'GET /user' });
      return { login: res.body.login, scopes: null };
    },

    async listOwners() {
      const me = await this.whoAmI();
      const orgs = await forgeList<{ username?: string; name?: string }>(t, `/user/orgs?limit=${PAGE}`);
      return [{ login: me.login, type: 'User' as const }, ...orgs.map((o) => ({ login: (o.username ?? o.name)!, type: 'Organization' as const }))];
    },

    async listRepositories() {
      return (await forgeList<Record<string, unknown>>(t, `/user/repos?limit=${PAGE}`)).map(toRepository);
    },

    // Gitea's contents API cuts the new branch and commits in one call (`new_branch`).
    async commitOnNewBranch(repo, c) {
      const url = `${repoPath(repo)}/contents/${encodePath(c.path)}`;
      const common = { message: c.message, branch: c.base, new_branch: c.branch };
      if (c.content === null) await forgeRequest(t, 'DELETE', url, { body: { ...common, sha: c.sha } });
      else {
        const content = Buffer.from(c.content, 'utf8').toString('base64');
        await forgeRequest(t, c.sha ? 'PUT' : 'POST', url, { body: { ...common, content, ...(c.sha ? { sha: c.sha } : {}) } });
      }
    },

    async pullRequestDiff(repo, number) {
      return String((await forgeRequest<string>(t, 'GET', `${repoPath(repo)}/pulls/${number}.diff`)).body ?? '');
    },

    async listRuns(repo, limit) {
      return shared.listRuns(repo, Math.min(limit, PAGE));
    },
  };
}
