import type { RepoWorkspace } from '../../repos/workspace.ts';

export interface GitState {
  commitHash: string | null;
  branch: string | null;
  hasLocalChanges: boolean;
  hasNonRemoteCommits: boolean;
}

/**
 * What the checkout at `dir` holds: its commit, its branch (null when detached), whether the
 * working tree differs from the commit, and whether any commit reachable from HEAD is on no
 * remote-tracking branch (always true for a repository without remotes that has commits).
 */
export async function readGitState(ws: RepoWorkspace, dir: string, signal?: AbortSignal): Promise<GitState> {
  const git = async (args: string) => {
    const res = await ws.exec(`git ${args}`, { cwd: dir, signal, timeoutMs: 60_000 });
    return { ok: res.exitCode === 0, out: res.stdout.trim(), err: res.stderr.trim() };
  };
  const head = await git('rev-parse --verify -q HEAD');
  const branch = await git('symbolic-ref --short -q HEAD');
  const status = await git('status --porcelain --untracked-files=normal');
  if (!status.ok) throw new Error(`git status failed: ${status.err}`);
  let unpushed = false;
  if (head.ok) {
    const count = await git('rev-list --count HEAD --not --remotes');
    if (!count.ok) throw new Error(`git rev-list failed: ${count.err}`);
    unpushed = Number(count.out) > 0;
  }
  return {
    commitHash: head.ok && head.out ? head.out : null,
    branch: branch.ok && branch.out ? branch.out : null,
    hasLocalChanges: status.out.length > 0,
    hasNonRemoteCommits: unpushed,
  };
}
