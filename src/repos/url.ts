import { InvalidRepoUrl } from './errors.ts';

/**
 * The one reading of a repository URL, as git reads it: `scheme://...` is a URL (https, http,
 * ssh, git, file, or any other scheme; which ones a use accepts is its policy, policy.ts), and
 * anything else with a colon before its first slash is git's scp-like `[user@]host:path` (ssh).
 * Each use (the clone on a computer, the control plane's clone, the stored key, the credential
 * lookup, the egress guard) layers its own rules on this reading and reads nothing itself.
 */
export interface RepoUrl {
  /** The URL as given, without surrounding white space. */
  url: string;
  /** Lower case, without `://`: `https`, `http`, `ssh`, `git`, `file`, ...; `ssh` for the scp-like form. */
  scheme: string;
  /** True for git's scp-like form, which has no port and no percent-encoding. */
  scpLike: boolean;
  /** User name and password as written in the URL; empty when there are none. */
  username: string;
  password: string;
  /** Host name in lower case (an IPv6 address in brackets); empty for file:// URLs without one. */
  host: string;
  /** The port the URL names, when it names one other than its scheme's default; undefined otherwise. */
  port: number | undefined;
  /** The path: percent-decoded for URLs, as written after the colon for the scp-like form. */
  path: string;
  /** The path segment before the name (`owner` in github.com/owner/app, `sub` in gitlab.com/group/sub/app). */
  owner: string | undefined;
  /** The last path segment without `.git`; empty when the path names none. */
  name: string;
  /**
   * The path's segments without a leading `~`, empty segments or the name's `.git`
   * (`group/sub/app`): with the host, what names the repository however it is reached.
   */
  fullName: string;
}

/** The scheme of a `scheme://...` URL, in lower case, or undefined when `url` does not start with one. */
export function schemeOf(url: string): string | undefined {
  return /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
}

/** `[user@]host:path`, git's scp-like syntax: groups user, host and path. */
const SCP_LIKE = /^(?:([^@/\s]+)@)?([^:/\s]+):(?!\/\/)(.+)$/;

/**
 * User, host (as written) and path of an scp-like address, or undefined when `url` is not one.
 * A `scheme://` URL never is, whatever follows its scheme.
 */
export function scpLike(url: string): { user: string; host: string; path: string } | undefined {
  if (schemeOf(url) !== undefined) return undefined;
  const m = SCP_LIKE.exec(url);
  return m ? { user: m[1] ?? '', host: m[2]!, path: m[3]! } : undefined;
}

/** `host` with `:port` when the URL names a port: how git credentials and repository keys name a host. */
export function hostWithPort(repo: Pick<RepoUrl, 'host' | 'port'>): string {
  return repo.port === undefined ? repo.host : `${repo.host}:${repo.port}`;
}

/** Throws InvalidRepoUrl when `raw` is neither a URL nor scp-like; every use's policy adds its own refusals. */
export function parseRepoUrl(raw: string): RepoUrl {
  const url = raw.trim();
  const scheme = schemeOf(url);
  let parts: Pick<RepoUrl, 'scheme' | 'scpLike' | 'username' | 'password' | 'host' | 'port' | 'path'>;
  if (scheme !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new InvalidRepoUrl(`repository URL ${url} is not a valid URL`);
    }
    let path: string;
    try {
      path = decodeURIComponent(parsed.pathname);
    } catch {
      throw new InvalidRepoUrl(`repository URL ${url} is not a valid URL (a stray % in its path)`);
    }
    parts = {
      scheme,
      scpLike: false,
      username: parsed.username,
      password: parsed.password,
      host: parsed.hostname.toLowerCase(),
      port: parsed.port === '' ? undefined : Number(parsed.port),
      path,
    };
  } else {
    const scp = scpLike(url);
    if (!scp) throw new InvalidRepoUrl(`repository URL ${url} is neither a URL (https://, ssh://, file://) nor host:path`);
    parts = { scheme: 'ssh', scpLike: true, username: scp.user, password: '', host: scp.host.toLowerCase(), port: undefined, path: scp.path };
  }
  const segments = parts.path
    .replace(/^~/, '')
    .split('/')
    .filter((s) => s !== '');
  const name = segments.at(-1)?.replace(/\.git$/, '') ?? '';
  return { url, ...parts, owner: segments.at(-2), name, fullName: [...segments.slice(0, -1), name].join('/') };
}

/** `parseRepoUrl`, or undefined where it throws: for uses that answer "not a repository URL" themselves. */
export function readRepoUrl(raw: string): RepoUrl | undefined {
  try {
    return parseRepoUrl(raw);
  } catch (err) {
    if (err instanceof InvalidRepoUrl) return undefined;
    throw err;
  }
}
