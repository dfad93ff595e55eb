import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { AppError } from '../../lib/errors.ts';
import { cloneRepository, remoteRef } from '../../repos/clone.ts';
import { CloneFailed } from '../../repos/errors.ts';
import { createLocalScratchWorkspace } from '../../repos/local-workspace.ts';
import type { PinnedClone } from '../../repos/pinned-clone.ts';
import { redactCredentials } from '../../repos/redact.ts';
import type { ProgramSource } from './contract.ts';
import { ProgramProblem } from './problem.ts';

const git = promisify(execFile);
const FULL_COMMIT = /^[0-9a-f]{40}$/;
// A checkout directory not renamed into place within this long was left by a killed run.
const STALE_TMP_MS = 60 * 60_000;

/** How the control plane reaches an organization's repository: the egress guard's addresses and the organization's forge credentials. */
export type PinRepository = (organizationId: string, repository: string) => Promise<PinnedClone>;

export interface CheckoutOptions {
  /** Checked-out commits live here, one directory each. */
  cacheDir: string;
  /** Scratch space for the clones. */
  scratchDir: string;
  pin: PinRepository;
}

/** `repo` in messages: the repository without credentials. */
export const shown = (source: ProgramSource) => redactCredentials(source.repository);

async function pinned(opts: CheckoutOptions, organizationId: string, source: ProgramSource): Promise<PinnedClone> {
  try {
    return await opts.pin(organizationId, source.repository);
  } catch (err) {
    if (err instanceof AppError) throw new ProgramProblem(`repository ${shown(source)} cannot be used: ${err.message}`, { cause: err });
    throw err;
  }
}

/** The commit `source.ref` names now: a branch's head, a tag's commit, or a full commit id as it is. */
export async function resolveRef(opts: CheckoutOptions, organizationId: string, source: ProgramSource, signal: AbortSignal): Promise<string> {
  const pin = await pinned(opts, organizationId, source);
  try {
    if (FULL_COMMIT.test(source.ref)) {
      // The repository must answer; whether it holds the commit shows at checkout.
      await remoteRef(source.repository, source.ref, signal, pin);
      return source.ref;
    }
    const commit = await remoteRef(source.repository, source.ref, signal, pin);
    if (!commit) {
      throw new ProgramProblem(`ref "${source.ref}" is neither a branch nor a tag of ${shown(source)}: name an existing branch, tag or full commit id`);
    }
    return commit;
  } catch (err) {
    if (err instanceof CloneFailed) throw new ProgramProblem(`repository ${shown(source)} cannot be read: ${err.message}`, { cause: err });
    throw err;
  }
}

/**
 * The program's directory at `commit`, the commit's whole tree checked out once into the cache and kept: keyed by the
 * organization, repository and commit (another organization naming the same commit of a repository
 * it cannot read never gets this one's copy). Atomic: the tree is written to a temporary directory
 * and renamed into place, so a killed checkout leaves no directory that is later trusted.
 */
export async function checkout(opts: CheckoutOptions, organizationId: string, source: ProgramSource, commit: string, signal: AbortSignal): Promise<string> {
  if (!FULL_COMMIT.test(commit)) throw new ProgramProblem(`"${commit}" is not a full commit id (40 hexadecimal characters)`);
  if (path.isAbsolute(source.path) || source.path.split(/[\\/]/).includes('..')) {
    throw new ProgramProblem(`path "${source.path}" must be relative to the repository's root, without ".."`);
  }
  const key = createHash('sha256').update(`${organizationId}\n${source.repository}\n`).digest('hex').slice(0, 24);
  const root = path.join(opts.cacheDir, `${key}-${commit}`);
  const programDir = path.join(root, source.path);
  if (!(await isDir(root))) await checkoutTree(opts, organizationId, source, commit, { key, root }, signal);
  if (!(await isDir(programDir))) {
    throw new ProgramProblem(
      `path "${source.path}" does not exist in ${shown(source)} at commit ${commit.slice(0, 12)}: name the directory holding Pulumi.yaml`,
    );
  }
  return programDir;
}

async function checkoutTree(
  opts: CheckoutOptions,
  organizationId: string,
  source: ProgramSource,
  commit: string,
  at: { key: string; root: string },
  signal: AbortSignal,
): Promise<void> {
  const { key, root } = at;
  await mkdir(opts.cacheDir, { recursive: true });
  await removeStaleTemporaries(opts.cacheDir);
  const pin = await pinned(opts, organizationId, source);
  const ws = await createLocalScratchWorkspace(opts.scratchDir);
  const tmp = path.join(opts.cacheDir, `.tmp-${key}-${commit}-${process.pid}-${Date.now().toString(36)}`);
  try {
    const branch = FULL_COMMIT.test(source.ref) ? null : source.ref;
    const dir = await cloneRepository(ws, { repoUrl: source.repository, branch }, signal, pin, { bare: true }).catch((err: unknown) => {
      if (err instanceof CloneFailed) throw new ProgramProblem(`repository ${shown(source)} cannot be cloned: ${err.message}`, { cause: err });
      throw err;
    });
    const gitDir = path.join((await ws.exec('pwd')).stdout.trim(), dir);
    const run = (...args: string[]) => git('git', ['--git-dir', gitDir, ...args], { signal, maxBuffer: 16 * 1024 * 1024 });
    await run('cat-file', '-e', `${commit}^{commit}`).catch(() => {
      throw new ProgramProblem(`commit ${commit} is not in ${shown(source)}${branch ? ` on ref "${branch}"` : ''}: was the ref rewritten?`);
    });
    await mkdir(tmp, { recursive: true });
    const tar = path.join(tmp, '.program.tar');
    await run('archive', '--format=tar', '-o', tar, commit);
    await git('tar', ['-xf', tar, '-C', tmp], { signal });
    await rm(tar);
    try {
      await rename(tmp, root);
    } catch (err) {
      // Another checkout of the same commit got there first: its tree is the same.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    }
  } finally {
    await Promise.all([ws.dispose(), rm(tmp, { recursive: true, force: true })]);
  }
}

async function isDir(dir: string): Promise<boolean> {
  return stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

async function removeStaleTemporaries(cacheDir: string) {
  const names = (await readdir(cacheDir)).filter((n) => n.startsWith('.tmp-'));
  await Promise.all(
    names.map(async (n) => {
      const s = await stat(path.join(cacheDir, n)).catch(() => undefined);
      if (s && Date.now() - s.mtimeMs > STALE_TMP_MS) await rm(path.join(cacheDir, n), { recursive: true, force: true });
    }),
  );
}
