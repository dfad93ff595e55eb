import type { PinnedClone } from '../../repos/pinned-clone.ts';
import { detectApps } from './apps.ts';
import { CRITERIA } from './catalogue.ts';
import type { Criterion, Score } from './criteria/index.ts';
import { readGitState, type GitState } from './git-state.ts';
import { openRepoContext } from './repo-context.ts';
import { redactCredentials } from './repo-url.ts';
import { sh, type RepoWorkspace } from '../../repos/workspace.ts';

export interface EvaluationResult extends GitState {
  apps: Record<string, { description: string }>;
  report: Record<string, Score>;
}

/** The repository cannot be cloned as asked: retrying will not help. */
export class CloneFailed extends Error {}

const CHECKOUT_DIR = 'repo';
const CLONE_TIMEOUT_MS = 15 * 60_000;

/**
 * Clones into the workspace with nothing interactive and nothing but network transports: no
 * prompts for credentials, no host-key questions, no local paths or `ext::` helpers, no LFS
 * downloads. Returns the checkout's directory.
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
  const branch = source.branch ? `--branch ${sh(source.branch)} --single-branch ` : '';
  const ssh = ['ssh', '-o', 'BatchMode=yes', ...(pinned?.sshOptions ?? []).flatMap((o) => ['-o', o])].join(' ');
  const env = [
    'GIT_TERMINAL_PROMPT=0',
    'GIT_ALLOW_PROTOCOL=https:http:ssh:git',
    'GIT_LFS_SKIP_SMUDGE=1',
    `GIT_SSH_COMMAND=${sh(ssh)}`,
  ].join(' ');
  const config = (pinned?.config ?? []).map((c) => `-c ${sh(c)} `).join('');
  const url = pinned?.url ?? source.repoUrl;
  const res = await ws.exec(`${env} git ${config}clone --quiet --no-tags ${opts.bare ? '--bare ' : ''}${branch}-- ${sh(url)} ${CHECKOUT_DIR}`, {
    timeoutMs: CLONE_TIMEOUT_MS,
    signal,
  });
  if (res.exitCode !== 0) {
    const reason = redactCredentials(res.stderr.trim().split('\n').slice(-3).join(' ')) || `git exited with ${res.exitCode}`;
    throw new CloneFailed(`cloning ${redactCredentials(source.repoUrl)}${source.branch ? ` (branch ${source.branch})` : ''} on ${ws.where} failed: ${reason}`);
  }
  return CHECKOUT_DIR;
}

/** Detects the applications of the checkout at `dir` and scores every criterion. */
export async function evaluateCheckout(
  ws: RepoWorkspace,
  dir: string,
  opts: { signal?: AbortSignal; criteria?: readonly Criterion[] } = {},
): Promise<EvaluationResult> {
  const git = await readGitState(ws, dir, opts.signal);
  const base = await openRepoContext(ws, dir, opts.signal);
  const apps = await detectApps(base);
  const ctx = { ...base, apps };
  const report: Record<string, Score> = {};
  for (const criterion of opts.criteria ?? CRITERIA) {
    opts.signal?.throwIfAborted();
    report[criterion.id] = await criterion.evaluate(ctx);
  }
  return {
    ...git,
    apps: Object.fromEntries(apps.map((a) => [a.path, { description: a.description }])),
    report,
  };
}
