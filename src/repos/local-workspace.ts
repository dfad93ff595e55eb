import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { LIST_FILES_COMMAND, parseFileList, type CommandResult, type ExecOptions, type ScratchWorkspace } from './workspace.ts';

const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10 * 60_000;

/** Keeps the last `limit` bytes of a stream. */
function collector(limit: number) {
  let chunks: Buffer[] = [];
  let size = 0;
  return {
    push(chunk: Buffer) {
      chunks.push(chunk);
      size += chunk.length;
      while (size > limit && chunks.length > 1) size -= chunks.shift()!.length;
    },
    text: () => Buffer.concat(chunks).toString('utf8'),
    reset: () => {
      chunks = [];
      size = 0;
    },
  };
}

function run(command: string, cwd: string, opts: ExecOptions): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(opts.signal.reason);
    // Its own process group, so a timeout or an abort stops git and everything it started.
    const child = spawn('/bin/sh', ['-c', command], {
      cwd,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0' },
    });
    const out = collector(MAX_OUTPUT_BYTES);
    const err = collector(MAX_OUTPUT_BYTES);
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    let stopped: Error | undefined;
    const stop = (reason: Error) => {
      stopped ??= reason;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(
      () => stop(new Error(`command timed out after ${opts.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms: ${command.slice(0, 80)}`)),
      opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    );
    const onAbort = () => stop(opts.signal!.reason instanceof Error ? opts.signal!.reason : new Error('aborted'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (stopped) return reject(stopped);
      resolve({ exitCode: code, stdout: out.text(), stderr: err.text() });
    });
  });
}

function inside(root: string, relative: string): string {
  const full = path.resolve(root, relative);
  if (full !== root && !full.startsWith(root + path.sep)) throw new Error(`path ${relative} leaves the workspace`);
  return full;
}

/** A workspace in an existing local directory (the caller owns it; `dispose` does nothing). */
export function localWorkspace(root: string): ScratchWorkspace {
  const base = path.resolve(root);
  return {
    where: 'local',
    exec: async (command, opts = {}) => run(command, inside(base, opts.cwd ?? '.'), opts),
    async readFile(file) {
      try {
        return await fs.readFile(inside(base, file));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR') return undefined;
        throw err;
      }
    },
    async listFiles(dir, opts = {}) {
      const res = await run(LIST_FILES_COMMAND, inside(base, dir), opts);
      if (res.exitCode !== 0) throw new Error(`listing files in ${dir} failed: ${res.stderr.trim()}`);
      return parseFileList(res.stdout);
    },
    dispose: async () => {},
  };
}

/** A fresh scratch directory under `parent` (the data directory's), removed by `dispose`. */
export async function createLocalScratchWorkspace(parent: string): Promise<ScratchWorkspace> {
  await fs.mkdir(parent, { recursive: true });
  const dir = await fs.mkdtemp(path.join(parent, 'eval-'));
  return { ...localWorkspace(dir), dispose: () => fs.rm(dir, { recursive: true, force: true }) };
}
