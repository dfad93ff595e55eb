import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { PinnedClone } from '../../repos/pinned-clone.ts';
import { cloneRepository, remoteHead } from '../../repos/clone.ts';
import { createLocalScratchWorkspace } from '../../repos/local-workspace.ts';

const git = promisify(execFile);
const YAML_FILE = /\.ya?ml$/i;
const MAX_BUFFER = 64 * 1024 * 1024;

/**
 * A bare clone of the source's branch (the scratch clone's rules: no prompts, network transports
 * only, held to the egress guard's addresses; nothing checked out, no hook runs), its head commit,
 * and the YAML files under `dir` at that commit, named by their path in the repository. When the
 * remote's head is `known`, only the head is read (`git ls-remote`), nothing is cloned.
 */
export async function readSourceCommit(
  scratchRoot: string,
  source: { repository: string; branch: string; path: string },
  pinned: PinnedClone,
  signal: AbortSignal,
  /** Skip reading files when the head is this commit (already applied). */
  known?: string | null,
): Promise<{ commit: string; files?: { path: string; content: string }[] }> {
  // An applied head is the common case (every interval): ask the remote first, clone only for a new commit.
  if (known) {
    const head = await remoteHead({ repoUrl: source.repository, branch: source.branch }, signal, pinned);
    if (head === known) return { commit: head };
  }
  const ws = await createLocalScratchWorkspace(scratchRoot);
  try {
    const dir = await cloneRepository(ws, { repoUrl: source.repository, branch: source.branch }, signal, pinned, { bare: true });
    const gitDir = path.join((await ws.exec('pwd')).stdout.trim(), dir);
    const run = async (...args: string[]) => (await git('git', ['--git-dir', gitDir, ...args], { maxBuffer: MAX_BUFFER, signal })).stdout;
    const commit = (await run('rev-parse', 'HEAD')).trim();
    if (commit === known) return { commit };
    const listed = await run('ls-tree', '-r', '-z', '--full-tree', 'HEAD', '--', source.path || '.');
    const blobs = listed
      .split('\0')
      .filter(Boolean)
      .map((line) => {
        const [meta, name] = line.split('\t') as [string, string];
        return { type: meta.split(' ')[1], oid: meta.split(' ')[2]!, name };
      })
      .filter((e) => e.type === 'blob' && YAML_FILE.test(e.name))
      .sort((a, b) => a.name.localeCompare(b.name));
    const files = await Promise.all(blobs.map(async (b) => ({ path: b.name, content: await run('cat-file', 'blob', b.oid) })));
    return { commit, files };
  } finally {
    await ws.dispose();
  }
}
