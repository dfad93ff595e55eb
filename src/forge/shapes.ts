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

/** Gitea writes "0001-01-01" or the Unix epoch for a time that has not happened yet. */
const when = (iso: unknown): string | null => (typeof iso === 'string' && Date.parse(iso) > 0 ? iso : null);

export function toRun(r: Raw): ForgeRun {
  // Gitea gives no head_branch or pull_requests but names the ref in `path` (a.yml@refs/pull/1/head).
  const ref = /@refs\/(?:heads\/(.+)|pull\/(\d+)\/)/.exec(r.path ?? '');
  const pullRequests = Array.isArray(r.pull_requests)
    ? r.pull_requests.map((p: Raw) => p.number).filter((n: unknown) => typeof n === 'number')
    : ref?.[2]
      ? [Number(ref[2])]
      : [];
  return {
    id: r.id,
    name: r.name ?? r.display_title ?? '',
    path: r.path ?? '',
    event: r.event ?? '',
    status: r.status ?? '',
    conclusion: r.conclusion || null,
    headBranch: r.head_branch ?? ref?.[1] ?? null,
    headSha: r.head_sha ?? null,
    pullRequests,
    htmlUrl: r.html_url ?? r.url ?? '',
    createdAt: when(r.created_at),
    updatedAt: when(r.updated_at) ?? when(r.completed_at),
    startedAt: when(r.run_started_at) ?? when(r.started_at),
    completedAt: when(r.completed_at),
  };
}
