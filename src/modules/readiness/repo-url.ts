/**
 * Repository URLs as callers write them (https, ssh, scp-like `git@host:owner/repo.git`) and the
 * one normalized key reports are filtered by: host (lower case) and path, without scheme,
 * credentials, trailing `/` or `.git`. Forges whose paths ignore case are keyed in lower case.
 */

const CASE_INSENSITIVE_HOSTS = new Set(['github.com', 'gitlab.com', 'bitbucket.org', 'codeberg.org']);
const SCP_LIKE = /^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9.-]+):(?!\/\/)(.+)$/;

/** Schemes the evaluator clones from; anything else (file://, ext::, local paths) is refused. */
export const CLONE_SCHEMES = ['https:', 'http:', 'ssh:', 'git:'];

interface ParsedRepoUrl {
  scheme: string;
  host: string;
  path: string;
}

function parse(raw: string): ParsedRepoUrl | undefined {
  const value = raw.trim();
  if (!value || /\s/.test(value)) return undefined;
  const scp = SCP_LIKE.exec(value);
  if (scp && !value.includes('://')) return { scheme: 'ssh:', host: scp[1]!.toLowerCase(), path: scp[2]! };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  const host = url.host.toLowerCase();
  if (url.protocol !== 'file:' && !host) return undefined;
  return { scheme: url.protocol, host, path: decodeURIComponent(url.pathname) };
}

/** The key a repository URL is matched on, or undefined when `raw` is not a repository URL. */
export function repoKey(raw: string): string | undefined {
  const parsed = parse(raw);
  if (!parsed) return undefined;
  let path = parsed.path.replace(/^\/+/, '').replace(/\/+$/, '').replace(/\.git$/, '').replace(/\/+$/, '');
  const host = parsed.host.replace(/:(443|80|22)$/, '');
  if (CASE_INSENSITIVE_HOSTS.has(host)) path = path.toLowerCase();
  return parsed.scheme === 'file:' ? `file/${path}` : `${host}/${path}`;
}

/** Why the evaluator will not clone `raw`, or undefined when it will. */
export function cloneUrlProblem(raw: string): string | undefined {
  const parsed = parse(raw);
  if (!parsed || !parsed.path.replace(/\//g, '')) {
    return 'is not a repository URL; pass e.g. https://github.com/acme/app.git or git@github.com:acme/app.git';
  }
  if (!CLONE_SCHEMES.includes(parsed.scheme)) {
    return `uses ${parsed.scheme}, which the evaluator does not clone from; use an https, http, ssh or git URL`;
  }
  return undefined;
}

/** `text` with the user names and passwords of any URLs in it removed, for messages and logs. */
export function redactCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1');
}
