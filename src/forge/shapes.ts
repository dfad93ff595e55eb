import type { ForgeEntry, ForgeFile, ForgePullRequest, ForgeRepository, ForgeRun } from './types.ts';

/**
 * Gitea's API copies GitHub's JSON names for repositories, contents, pull requests and workflow
 * runs, so one set of readers serves both adapters; the differences are in the adapters.
 */
type Raw = Record<string, any>;

export function toRepository(r: Raw): ForgeRepository {
  return {
    fullName: r.full_name,
    owner: r.owner?.login ?? r.owner?.username ?? String(r.full_name).split('/')[0],
    name: r.name,
    private: Boolean(r.private),
    archived: Boolean(r.archived),
    canPush: Boolean(r.permissions?.push ?? r.permissions?.admin),
    defaultBranch: r.default_branch || 'main',
    htmlUrl: r.html_url,
    cloneUrl: r.clone_url,
  };
}

export function toEntry(e: Raw): ForgeEntry {
  return { name: e.name, path: e.path, type: e.type === 'file' ? 'file' : e.type === 'dir' ? 'dir' : 'other' };
}

export function toFile(f: Raw): ForgeFile {
  const content = f.encoding === 'base64' || f.encoding === undefined ? Buffer.from(String(f.content ?? ''), 'base64').toString('utf8') : String(f.content);
  return { path: f.path, sha: f.sha, content };
}

export function toPullRequest(p: Raw): ForgePullRequest {
  return {
    number: p.number,
    htmlUrl: p.html_url,
    title: p.title ?? '',
    body: p.body ?? '',
    draft: Boolean(p.draft),
    headRef: p.head?.ref ?? '',
    headSha: p.head?.sha ?? '',
    baseRef: p.base?.ref ?? '',
    author: p.user?.login ?? '',
  };
}

export function toRun(r: Raw): ForgeRun {
  return {
    id: r.id,
    name: r.name ?? r.display_title ?? '',
    path: r.path ?? '',
    event: r.event ?? '',
    status: r.status ?? '',
    conclusion: r.conclusion || null,
    headBranch: r.head_branch ?? null,
    headSha: r.head_sha ?? null,
    pullRequests: Array.isArray(r.pull_requests) ? r.pull_requests.map((p: Raw) => p.number).filter((n: unknown) => typeof n === 'number') : [],
    htmlUrl: r.html_url ?? r.url ?? '',
    createdAt: r.created_at,
    updatedAt: r.updated_at ?? r.created_at,
    startedAt: r.run_started_at || null,
  };
}
