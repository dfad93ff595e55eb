import { createHash } from 'node:crypto';
import { InvalidMachineInput } from './errors.ts';

/** A repository URL as `git clone` will get it, and what names it. */
export interface RepoUrl {
  url: string;
  /** Lower-case host (with port), `undefined` for `file://`. */
  host: string | undefined;
  /** The path segment before the name (`owner` in github.com/owner/repo), when there is one. */
  owner: string | undefined;
  /** The last path segment without `.git`, made safe as a directory name. */
  name: string;
  /**
   * Host and path without `.git` or trailing slashes: the same repository reached over https or
   * ssh has one identity, so a clone made either way is recognised.
   */
  identity: string;
}

/** `[user@]host:path`, git's scp-like syntax: group 1 the host, group 2 the path. */
export const SCP_LIKE = /^(?:[^@/\s]+@)?([^:/\s]+):(?!\/\/)(.+)$/;

/**
 * Accepts https/http, ssh://, git://, file:// and scp-like (`git@host:owner/repo.git`) URLs.
 * Refuses a password in the URL: git would show it in its command line (readable by every user
 * of the machine through ps) and in `remote.origin.url`; tokens belong in the git credentials.
 */
export function parseRepoUrl(raw: string): RepoUrl {
  const url = raw.trim();
  if (url === '' || /[\s\u0000-\u001f]/.test(url) || url.startsWith('-')) {
    throw new InvalidMachineInput(`repository URL ${JSON.stringify(raw)} is not a valid git URL`);
  }
  // `<transport>::<address>` runs a git remote helper (ext:: runs any command): never for a URL from a user.
  if (/^[A-Za-z0-9+.-]+::/.test(url)) {
    throw new InvalidMachineInput(`repository URL ${url} names a git remote helper; use https://, ssh://, git:// or file://`);
  }
  let host: string | undefined;
  let path: string;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  if (scheme !== undefined) {
    if (!['https', 'http', 'ssh', 'git', 'file'].includes(scheme)) {
      throw new InvalidMachineInput(`repository URL ${url} uses ${scheme}://; use https://, ssh://, git:// or file://`);
    }
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new InvalidMachineInput(`repository URL ${url} is not a valid URL`);
    }
    if (parsed.password) {
      throw new InvalidMachineInput(`repository URL ${parsed.host}${parsed.pathname} contains a password; remove it and configure a git credential for ${parsed.host} instead`);
    }
    host = scheme === 'file' ? undefined : parsed.host.toLowerCase();
    path = decodeURIComponent(parsed.pathname);
  } else {
    const m = SCP_LIKE.exec(url);
    if (!m) throw new InvalidMachineInput(`repository URL ${url} is neither a URL (https://, ssh://, file://) nor host:path`);
    host = m[1]!.toLowerCase();
    path = m[2]!;
  }
  const segments = path
    .replace(/^~/, '')
    .split('/')
    .filter((s) => s !== '');
  const last = segments.at(-1)?.replace(/\.git$/, '');
  const name = last === undefined ? '' : safeName(last);
  if (name === '') throw new InvalidMachineInput(`repository URL ${url} does not name a repository`);
  const ownerSegment = segments.at(-2);
  const owner = ownerSegment === undefined ? undefined : safeName(ownerSegment) || undefined;
  const identity = `${host ?? 'file'}/${[...segments.slice(0, -1), last].join('/')}`;
  return { url, host, owner, name, identity };
}

function safeName(segment: string): string {
  const name = segment.replace(/[^A-Za-z0-9._-]/g, '-');
  return name === '.' || name === '..' ? '' : name;
}

/**
 * Directory names to try, in order, under the workspace. Two repositories with the same name
 * (acme/api and other/api) must not share a directory: the first one cloned gets `api`, the
 * next `other-api`, and only when that is taken too, `api-<8 hex of the identity>`, which no
 * other repository gets. The order makes the choice deterministic, and because an existing clone
 * of the same repository is found under any of these names, a retried clone lands where the
 * first attempt did.
 */
export function directoryCandidates(repo: RepoUrl): string[] {
  const hash = createHash('sha256').update(repo.identity).digest('hex').slice(0, 8);
  const names = [repo.name];
  if (repo.owner) names.push(`${repo.owner}-${repo.name}`);
  names.push(`${repo.name}-${hash}`);
  return names;
}

/** True when two URLs name the same repository (see `identity`). */
export function sameRepository(a: string, b: string): boolean {
  try {
    return parseRepoUrl(a).identity === parseRepoUrl(b).identity;
  } catch {
    return false;
  }
}
