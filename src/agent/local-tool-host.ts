import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { OutputTail } from '../provisioning/ssh/output-tail.ts';
import { DEFAULT_MAX_OUTPUT_BYTES, ExecTimedOut, lsListing, type ExecResult, type ToolHost } from './tool-host.ts';

/**
 * A directory on the control plane itself as the agent's host (the wiki's checkout). Files are
 * read, written, listed and stat'ed only inside `workspace`, symlinks followed; commands run with
 * a working directory inside it. The commands themselves are not confined: give this host only
 * tools whose commands stay put (the read-only ones), never run_command. `name` is what a
 * refusal calls the workspace, e.g. "the repository".
 */
export function localToolHost(workspace: string, name = 'the workspace'): ToolHost {
  const root = path.resolve(workspace);
  let realRoot: Promise<string> | undefined;
  const inside = async (p: string) => confine(root, (realRoot ??= fs.realpath(root)), p, name);
  const exec: ToolHost['exec'] = async (command, opts = {}) => run(command, await inside(opts.cwd ?? root), opts);
  return {
    cwd: root,
    exec,
    readFile: async (file) => fs.readFile(await inside(file)),
    async writeFile(file, content) {
      const full = await inside(file);
      await fs.mkdir(path.dirname(full), { recursive: true });
      await fs.writeFile(full, content);
    },
    async stat(file) {
      const st = await fs.stat(await inside(file)).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return null;
        throw err;
      });
      return st && { size: st.size, isFile: st.isFile(), isDirectory: st.isDirectory() };
    },
    list: async (dir, opts) => lsListing(exec, await inside(dir), opts?.signal),
  };
}

/** `p` is inside `root`, or `root` itself. */
function isInside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

/** The absolute path `p` names under `root`; throws when it leads out, lexically or through a symlink. */
async function confine(root: string, realRoot: Promise<string>, p: string, name: string): Promise<string> {
  const full = path.resolve(root, p);
  const outside = new Error(`${p} is outside ${name}; use paths under ${root}`);
  if (!isInside(root, full)) throw outside;
  // What exists of the path (a file being written may not yet) must really be inside too.
  for (let existing = full; ; existing = path.dirname(existing)) {
    const real = await fs.realpath(existing).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
      throw err;
    });
    if (real === undefined) continue;
    if (!isInside(await realRoot, real)) throw outside;
    return full;
  }
}

/** Runs `command` with /bin/sh in its own process group, which a timeout or an abort kills whole. */
function run(command: string, cwd: string, opts: Parameters<ToolHost['exec']>[1] & object): Promise<ExecResult> {
  opts.signal?.throwIfAborted();
  const limit = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const stdout = new OutputTail(limit);
  const stderr = new OutputTail(limit);
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let failure: Error | undefined;
    const kill = (err: Error) => {
      failure ??= err;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => kill(new ExecTimedOut(`command in ${cwd} timed out after ${opts.timeoutMs} ms and was stopped`)), opts.timeoutMs);
    const onAbort = () => kill(opts.signal!.reason instanceof Error ? opts.signal!.reason : new Error('the command was aborted'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const settle = () => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    child.stdout.on('data', (chunk: Buffer) => {
      stdout.push(chunk);
      opts.onStdout?.(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr.push(chunk);
      opts.onStderr?.(chunk);
    });
    child.on('error', (err) => {
      settle();
      reject(err);
    });
    child.on('close', (code, signal) => {
      settle();
      if (failure) reject(failure);
      else resolve({ exitCode: code, signal, stdout: stdout.toString(), stderr: stderr.toString(), truncated: stdout.truncated || stderr.truncated });
    });
  });
}
