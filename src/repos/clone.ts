import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CloneFailed } from './errors.ts';
import type { PinnedClone } from './pinned-clone.ts';
import { redactCredentials } from './redact.ts';
import { shellQuote } from '../ssh/index.ts';
import type { RepoWorkspace } from './workspace.ts';

const git = promisify(execFile);
const CHECKOUT_DIR = 'repo';
const CLONE_TIMEOUT_MS = 15 * 60_000;

/** git's environment for a network operation: no prompts, network transports only, no LFS downloads, pinned ssh. */
function gitEnv(pinned: PinnedClone | undefined): Record<string, string> {
  const ssh = ['ssh', '-o', 'BatchMode=yes', ...(pinned?.sshOptions ?? []).flatMap((o) => ['-o', o])].join(' ');
  return { GIT_TERMINAL_PROMPT: '0', GIT_ALLOW_PROTOCOL: 'https:http:ssh:git', GIT_LFS_SKIP_SMUDGE: '1', GIT_SSH_COMMAND: ssh };
}

/** `git ls-remote` of `refs` (run from the control plane under the same rules as a clone): each ref's commit. */
async function lsRemote(repoUrl: string, refs: string[], signal: AbortSignal, pinned: PinnedClone, what: string): Promise<Map<string, string>> {
  const args = [...pinned.config.flatMap((c) => ['-c', c]), 'ls-remote', '--', pinned.url, ...refs];
  try {
    const { stdout } = await git('git', args, { env: { ...process.env, ...gitEnv(pinned) }, signal, timeout: CLONE_TIMEOUT_MS });
    return new Map([...stdout.matchAll(/^([0-9a-f]{40,64})\t(\S+)$/gm)].map((m) => [m[2]!, m[1]!]));
  } catch (err) {
    const reason = redactCredentials(((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n').slice(-3).join(' '));
    throw new CloneFailed(`reading ${what} of ${redactCredentials(repoUrl)} failed: ${reason}`);
  }
}

/**
 * The commit a branch's head is at on the remote, without cloning anything; undefined when there
 * is no such branch.
 */
export async function remoteHead(source: { repoUrl: string; branch: string }, signal: AbortSignal, pinned: PinnedClone): Promise<string | undefined> {
  const ref = `refs/heads/${source.branch}`;
  return (await lsRemote(source.repoUrl, [ref], signal, pinned, `the head (branch ${source.branch})`)).get(ref);
}

/**
 * The commit a branch or tag (a tag peeled to its commit) is at on the remote, branches first;
 * undefined when there is neither.
 */
export async function remoteRef(repoUrl: string, name: string, signal: AbortSignal, pinned: PinnedClone): Promise<string | undefined> {
  const [head, tag] = [`refs/heads/${name}`, `refs/tags/${name}`];
  const refs = await lsRemote(repoUrl, [head, tag, `${tag}^{}`], signal, pinned, `ref ${name}`);
  return refs.get(head) ?? refs.get(`${tag}^{}`) ?? refs.get(tag);
}

/**
 * Clones into a scratch workspace (readiness evaluations, wiki runs) with nothing interactive and
 * nothing but network transports: no prompts for credentials, no host-key questions, no local
 * paths or `ext::` helpers, no LFS downloads. Returns the checkout's directory; throws
 * CloneFailed, credentials redacted, when git fails.
 */
export async function cloneRepository(
  ws: RepoWorkspace,
  source: { repoUrl: string; branch?: string | null },
  signal?: AbortSignal,
  /** Set where the control plane clones from its own network: the egress guard's checked addresses. */
  pinned?: PinnedClone,
  /** `bare`: objects only, no checkout (the wiki survey reads blobs, never a work tree). */
  opts: { bare?: boolean } = {},
): Promise<string> {
  const branch = source.branch ? `--branch ${shellQuote(source.branch)} --single-branch ` : '';
  const env = Object.entries(gitEnv(pinned))
    .map(([k, v]) => `${k}=${shellQuote(v)}`)
    .join(' ');
  const config = (pinned?.config ?? []).map((c) => `-c ${shellQuote(c)} `).join('');
  const url = pinned?.url ?? source.repoUrl;
  const res = await ws.exec(`${env} git ${config}clone --quiet --no-tags ${opts.bare ? '--bare ' : ''}${branch}-- ${shellQuote(url)} ${CHECKOUT_DIR}`, {
    timeoutMs: CLONE_TIMEOUT_MS,
    signal,
  });
  if (res.exitCode !== 0) {
    const reason = redactCredentials(res.stderr.trim().split('\n').slice(-3).join(' ')) || `git exited with ${res.exitCode}`;
    throw new CloneFailed(`cloning ${redactCredentials(source.repoUrl)}${source.branch ? ` (branch ${source.branch})` : ''} on ${ws.where} failed: ${reason}`);
  }
  return CHECKOUT_DIR;
}
