import { encodePath, forgeRequest, type ForgeTransport } from './http.ts';
import { toEntry, toFile, toPullRequest, toRepository, toRun } from './shapes.ts';
import type { ForgeClient } from './types.ts';

export const repoPath = (repo: string) => `/repos/${encodePath(repo)}`;

/**
 * The calls Gitea answers at the same paths and in the same JSON as GitHub (contents, pulls,
 * issue comments, workflow runs); only the page-size parameter differs.
 */
export function githubShapedCalls(
  t: ForgeTransport,
  pageParam: 'limit' | 'per_page',
): Pick<ForgeClient, 'getRepository' | 'listDirectory' | 'readFile' | 'openPullRequest' | 'getPullRequest' | 'commentOnPullRequest' | 'listRuns'> {
  const contents = (repo: string, path: string, ref: string) =>
    forgeRequest<any>(t, 'GET', `${repoPath(repo)}/contents/${encodePath(path)}?ref=${encodeURIComponent(ref)}`, { allow: [404] });
  return {
    async getRepository(repo) {
      return toRepository((await forgeRequest<Record<string, unknown>>(t, 'GET', repoPath(repo))).body);
    },
    async listDirectory(repo, dir, ref) {
      const res = await contents(repo, dir, ref);
      return res.status === 404 || !Array.isArray(res.body) ? null : res.body.map(toEntry);
    },
    async readFile(repo, path, ref) {
      const res = await contents(repo, path, ref);
      return res.status === 404 || Array.isArray(res.body) || res.body?.type !== 'file' ? null : toFile(res.body);
    },
    async openPullRequest(repo, pr) {
      return toPullRequest((await forgeRequest<Record<string, unknown>>(t, 'POST', `${repoPath(repo)}/pulls`, { body: pr })).body);
    },
    async getPullRequest(repo, number) {
      return toPullRequest((await forgeRequest<Record<string, unknown>>(t, 'GET', `${repoPath(repo)}/pulls/${number}`)).body);
    },
    async commentOnPullRequest(repo, number, body) {
      const res = await forgeRequest<{ id: number; html_url: string }>(t, 'POST', `${repoPath(repo)}/issues/${number}/comments`, { body: { body } });
      return { id: res.body.id, htmlUrl: res.body.html_url };
    },
    async listRuns(repo, limit) {
      const res = await forgeRequest<{ workflow_runs?: Record<string, unknown>[] }>(t, 'GET', `${repoPath(repo)}/actions/runs?${pageParam}=${limit}`);
      return (res.body.workflow_runs ?? []).map(toRun);
    },
  };
}
