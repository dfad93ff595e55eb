import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const MAX_LISTING_BYTES = 512 * 1024 * 1024;

/** A file of the commit being documented: its path, blob SHA and size in bytes. */
export interface TreeEntry {
  path: string;
  sha: string;
  size: number;
}

/** Lists HEAD's files with sizes, NUL-separated so any name survives (run locally or on a computer). */
export const TREE_COMMAND = 'ls-tree -r -l -z --full-tree HEAD';

/** Blobs of a `TREE_COMMAND` listing; symlinks and submodules are left out. */
export function parseTree(out: string): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (const record of out.split('\0')) {
    if (!record) continue;
    const tab = record.indexOf('\t');
    const [mode, type, sha, size] = record.slice(0, tab).split(/\s+/);
    if (type !== 'blob' || mode === '120000') continue;
    entries.push({ path: record.slice(tab + 1), sha: sha!, size: Number(size) });
  }
  return entries;
}

/**
 * git on the control plane's bare clone. Only plumbing commands that read objects: nothing here
 * checks files out, runs hooks or filters, so the repository's own code never runs.
 */
export function gitRepo(gitDir: string) {
  const git = async (args: string[], signal?: AbortSignal) => {
    const { stdout } = await run('git', [`--git-dir=${gitDir}`, ...args], {
      encoding: 'utf8',
      maxBuffer: MAX_LISTING_BYTES,
      signal,
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' },
    });
    return stdout;
  };
  return {
    git,
    /** Every file (blob) of HEAD, NUL-separated so any name survives; symlinks and submodules are left out. */
    async tree(signal?: AbortSignal): Promise<TreeEntry[]> {
      return parseTree(await git(TREE_COMMAND.split(' '), signal));
    },
    async head(signal?: AbortSignal): Promise<{ commitHash: string; branch: string | null; committedAt: Date }> {
      const [hash, time] = (await git(['log', '-1', '--format=%H %ct', 'HEAD'], signal)).trim().split(' ');
      const branch = (await git(['symbolic-ref', '--quiet', '--short', 'HEAD'], signal).catch(() => '')).trim() || null;
      return { commitHash: hash!, branch, committedAt: new Date(Number(time) * 1000) };
    },
    /** Blob contents by SHA through one `git cat-file --batch`, streamed. */
    readBlobs(shas: string[], signal?: AbortSignal): Promise<Map<string, Buffer>> {
      return new Promise((resolve, reject) => {
        const child = spawn('git', [`--git-dir=${gitDir}`, 'cat-file', '--batch'], { stdio: ['pipe', 'pipe', 'pipe'], signal });
        const blobs = new Map<string, Buffer>();
        let pending: Buffer = Buffer.alloc(0);
        child.stdout.on('data', (chunk: Buffer) => {
          pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
          for (;;) {
            const nl = pending.indexOf(10);
            if (nl < 0) return;
            const header = pending.subarray(0, nl).toString('utf8');
            const [sha, type, size] = header.split(' ');
            if (type === 'missing') {
              pending = pending.subarray(nl + 1);
              continue;
            }
            const length = Number(size);
            if (pending.length < nl + 1 + length + 1) return;
            blobs.set(sha!, pending.subarray(nl + 1, nl + 1 + length));
            pending = pending.subarray(nl + 1 + length + 1);
          }
        });
        let stderr = '';
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve(blobs) : reject(new Error(`git cat-file failed (${code}): ${stderr.trim()}`))));
        child.stdin.end([...new Set(shas)].join('\n') + '\n');
      });
    },
  };
}
export type GitRepo = ReturnType<typeof gitRepo>;
