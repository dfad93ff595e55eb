import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { PinnedClone } from '../../../repos/pinned-clone.ts';
import { shellQuote, type SshClient, type SshTarget } from '../../../ssh/index.ts';
import { cloneRepository } from '../../../repos/clone.ts';
import { createLocalScratchWorkspace } from '../../../repos/local-workspace.ts';
import { createSshScratchWorkspace } from '../../../repos/ssh-workspace.ts';
import { parseTree, TREE_COMMAND } from '../survey/git-repo.ts';
import { checkBounds, type SurveyBounds } from '../survey/survey.ts';

const run = promisify(execFile);

/** A bare clone on the control plane's scratch space; `dispose` removes it. */
export interface LocalClone {
  gitDir: string;
  dispose(): Promise<void>;
}

/**
 * Clones with the scratch clone's safe rules (repos/clone.ts: no prompts, network transports
 * only, held to the egress guard's checked addresses) as a bare repository: the survey reads
 * objects, nothing is checked out, no hook or filter of the repository runs.
 */
export async function cloneLocally(
  scratchRoot: string,
  source: { repoUrl: string; branch: string | null },
  pinned: PinnedClone,
  signal: AbortSignal,
): Promise<LocalClone> {
  const ws = await createLocalScratchWorkspace(scratchRoot);
  try {
    const dir = await cloneRepository(ws, source, signal, pinned, { bare: true });
    const root = (await ws.exec('pwd')).stdout.trim();
    return { gitDir: path.join(root, dir), dispose: () => ws.dispose() };
  } catch (err) {
    await ws.dispose();
    throw err;
  }
}

/**
 * Clones on a computer over SSH (the computer's network, its credentials), checks the size bounds
 * there, then brings the history back as a git bundle and unpacks it into a local bare clone, so
 * the survey reads local objects whichever way the code arrived.
 */
export async function cloneOnComputer(
  ssh: SshClient,
  target: SshTarget,
  scratchRoot: string,
  source: { repoUrl: string; branch: string | null },
  bounds: SurveyBounds,
  signal: AbortSignal,
): Promise<LocalClone> {
  const remote = await createSshScratchWorkspace(ssh, target, { signal });
  await fs.mkdir(scratchRoot, { recursive: true });
  const local = await fs.mkdtemp(path.join(scratchRoot, 'wiki-'));
  const dispose = () => fs.rm(local, { recursive: true, force: true });
  try {
    const dir = await cloneRepository(remote, source, signal, undefined, { bare: true });
    const listed = await remote.exec(`git --git-dir=${shellQuote(dir)} ${TREE_COMMAND}`, { signal });
    if (listed.exitCode !== 0) throw new Error(`listing the clone on ${remote.where} failed: ${listed.stderr.trim()}`);
    checkBounds(parseTree(listed.stdout), bounds);
    // The branch travels with HEAD in the bundle, so the local clone knows which branch it documents.
    const branch = (await remote.exec(`git --git-dir=${shellQuote(dir)} symbolic-ref --quiet --short HEAD`, { signal })).stdout.trim();
    const bundled = await remote.exec(`git --git-dir=${shellQuote(dir)} bundle create repo.bundle HEAD${branch ? ` ${shellQuote(branch)}` : ''}`, { signal });
    if (bundled.exitCode !== 0) throw new Error(`bundling the clone on ${remote.where} failed: ${bundled.stderr.trim()}`);
    const root = (await remote.exec('pwd')).stdout.trim();
    await ssh.downloadFile(target, `${root}/repo.bundle`, path.join(local, 'repo.bundle'), { signal });
    await run('git', ['clone', '--quiet', '--bare', path.join(local, 'repo.bundle'), path.join(local, 'repo.git')], {
      signal,
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ALLOW_PROTOCOL: 'file' },
    });
    await fs.rm(path.join(local, 'repo.bundle'));
    return { gitDir: path.join(local, 'repo.git'), dispose };
  } catch (err) {
    await dispose();
    throw err;
  } finally {
    await remote.dispose().catch(() => undefined);
  }
}
