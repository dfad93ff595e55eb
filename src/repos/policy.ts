import { createHash } from 'node:crypto';
import { InvalidRepoUrl } from './errors.ts';
import { hostWithPort, parseRepoUrl, readRepoUrl, schemeOf } from './url.ts';

/*
 * What each use accepts of a repository URL, all read by url.ts's one parser: the clone on a
 * computer's workspace, the scratch clone of readiness evaluations and wiki runs, the key they
 * are stored under, the host a forge credential is looked up by, and the name people read.
 */

/** A repository to clone on a computer: the URL as `git clone` gets it, and what names it there. */
export interface ComputerRepo {
  url: string;
  /** Lower-case host (with port), `undefined` for `file://`. */
  host: string | undefined;
  /** The path segment before the name, made safe as a directory name, when there is one. */
  owner: string | undefined;
  /** The last path segment without `.git`, made safe as a directory name. */
  name: string;
  /**
   * Host and path without `.git` or trailing slashes: the same repository reached over https or
   * ssh has one identity, so a clone made either way is recognised.
   */
  identity: string;
}

const COMPUTER_SCHEMES = ['https', 'http', 'ssh', 'git', 'file'];

/**
 * A clone on a computer accepts https/http, ssh://, git://, file:// and scp-like
 * (`git@host:owner/repo.git`) URLs. Refuses a password in the URL: git would show it in its
 * command line (readable by every user of the machine through ps) and in `remote.origin.url`;
 * tokens belong in the git credentials. Throws InvalidRepoUrl saying why.
 */
export function computerRepo(raw: string): ComputerRepo {
  const url = raw.trim();
  if (url === '' || /[\s\u0000-\u001f]/.test(url) || url.startsWith('-')) {
    throw new InvalidRepoUrl(`repository URL ${JSON.stringify(raw)} is not a valid git URL`);
  }
  // `<transport>::<address>` runs a git remote helper (ext:: runs any command): never for a URL from a user.
  if (/^[A-Za-z0-9+.-]+::/.test(url)) {
    throw new InvalidRepoUrl(`repository URL ${url} names a git remote helper; use https://, ssh://, git:// or file://`);
  }
  const scheme = schemeOf(url);
  if (scheme !== undefined && !COMPUTER_SCHEMES.includes(scheme)) {
    throw new InvalidRepoUrl(`repository URL ${url} uses ${scheme}://; use https://, ssh://, git:// or file://`);
  }
  const repo = parseRepoUrl(url);
  if (repo.password) {
    const host = hostWithPort(repo);
    throw new InvalidRepoUrl(`repository URL ${host}${repo.path} contains a password; remove it and configure a git credential for ${host} instead`);
  }
  const name = safeName(repo.name);
  if (name === '') throw new InvalidRepoUrl(`repository URL ${url} does not name a repository`);
  const host = repo.scheme === 'file' ? undefined : hostWithPort(repo);
  const owner = repo.owner === undefined ? undefined : safeName(repo.owner) || undefined;
  return { url, host, owner, name, identity: `${host ?? 'file'}/${repo.fullName}` };
}

function safeName(segment: string): string {
  const name = segment.replace(/[^A-Za-z0-9._-]/g, '-');
  return name === '.' || name === '..' ? '' : name;
}

/**
 * Directory names to try, in order, under a computer's workspace. Two repositories with the same
 * name (acme/api and other/api) must not share a directory: the first one cloned gets `api`, the
 * next `other-api`, and only when that is taken too, `api-<8 hex of the identity>`, which no
 * other repository gets. The order makes the choice deterministic, and because an existing clone
 * of the same repository is found under any of these names, a retried clone lands where the
 * first attempt did.
 */
export function directoryCandidates(repo: ComputerRepo): string[] {
  const hash = createHash('sha256').update(repo.identity).digest('hex').slice(0, 8);
  const names = [repo.name];
  if (repo.owner) names.push(`${repo.owner}-${repo.name}`);
  names.push(`${repo.name}-${hash}`);
  return names;
}

/** True when two URLs name the same repository on a computer (see `identity`). */
export function sameRepository(a: string, b: string): boolean {
  try {
    return computerRepo(a).identity === computerRepo(b).identity;
  } catch {
    return false;
  }
}

/** Forges whose paths ignore case: their keys are in lower case. */
const CASE_INSENSITIVE_HOSTS = new Set(['github.com', 'gitlab.com', 'bitbucket.org', 'codeberg.org']);
/** The scp-like hosts and users a key is made for: DNS names and plain user names. */
const KEYED_SCP_HOST = /^[A-Za-z0-9.-]+$/;
const KEYED_SCP_USER = /^[A-Za-z0-9._-]*$/;

/** A URL readiness evaluations and wiki runs accept (to key, to clone): no white space, a host unless file://. */
function readForRuns(raw: string) {
  const value = raw.trim();
  if (!value || /\s/.test(value)) return undefined;
  const repo = readRepoUrl(value);
  if (!repo) return undefined;
  if (repo.scpLike) {
    if (!KEYED_SCP_HOST.test(repo.host) || !KEYED_SCP_USER.test(repo.username)) return undefined;
  } else if (repo.scheme !== 'file' && !repo.host) {
    return undefined;
  }
  return repo;
}

/**
 * The key reports and wiki runs are stored and filtered by (`repo_key`), or undefined when `raw`
 * is not a repository URL: host (lower case, without a default port) and path, without scheme,
 * credentials, trailing `/` or `.git`, so https, ssh and scp-like forms of one repository share
 * it. Forges whose paths ignore case are keyed in lower case. Stored keys depend on this: it
 * must not change.
 */
export function repoKey(raw: string): string | undefined {
  const repo = readForRuns(raw);
  if (!repo) return undefined;
  let path = repo.path
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .replace(/\/+$/, '');
  const host = hostWithPort(repo).replace(/:(443|80|22)$/, '');
  if (CASE_INSENSITIVE_HOSTS.has(host)) path = path.toLowerCase();
  return repo.scheme === 'file' ? `file/${path}` : `${host}/${path}`;
}

/** Schemes a scratch clone fetches over; anything else (file://, ext::, local paths) is refused. */
const SCRATCH_CLONE_SCHEMES = ['https', 'http', 'ssh', 'git'];

/**
 * Why a scratch clone (clone.ts: readiness evaluations and wiki runs, on the control plane or on
 * a computer) will not clone `raw`, or undefined when it will.
 */
export function scratchCloneProblem(raw: string): string | undefined {
  const repo = readForRuns(raw);
  if (!repo || !repo.path.replace(/\//g, '')) {
    return 'is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git';
  }
  if (!SCRATCH_CLONE_SCHEMES.includes(repo.scheme)) {
    return `uses ${repo.scheme}:, which the evaluator does not clone from; use an https, http, ssh or git URL`;
  }
  return undefined;
}

/** The host (with port) a forge credential for the repository is looked up by, lower-cased. */
export function repositoryHost(raw: string): string | undefined {
  const repo = readRepoUrl(raw);
  return repo?.host ? hostWithPort(repo) : undefined;
}

/** The repository's name as a person reads it (the wiki's title): its last path segment without `.git`. */
export function repositoryName(raw: string): string {
  return readRepoUrl(raw)?.name || raw;
}
