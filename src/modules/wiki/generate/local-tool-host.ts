import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ExecResult, SshClient } from '../../../provisioning/ssh/index.ts';
import { readFileTool, globTool, listDirectoryTool, searchTextTool, type AgentTool } from '../../../agent/tools.ts';

const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

function inside(root: string, p: string): string {
  const full = path.resolve(root, p);
  if (full !== root && !full.startsWith(root + path.sep)) throw new Error(`${p} is outside the repository; read files under ${root}`);
  return full;
}

/**
 * The sessions runtime's tools expect a machine to run on; for wiki pages that machine is a
 * checkout on the control plane's scratch space. This host runs the fixed commands of the
 * read-only tools (ls, a bash glob, grep) there and reads files, confined to the checkout; it
 * offers no way to write or to run anything else.
 */
export function localToolHost(root: string): SshClient {
  const unavailable = () => Promise.reject(new Error('wiki generation reads the repository only'));
  return {
    exec: (_target, command, opts = {}) =>
      new Promise<ExecResult>((resolve, reject) => {
        const child = spawn('/bin/sh', ['-c', command], { cwd: inside(root, opts.cwd ?? '.'), stdio: ['ignore', 'pipe', 'pipe'], signal: opts.signal, timeout: opts.timeoutMs });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => (stdout = (stdout + c.toString()).slice(-MAX_OUTPUT_BYTES)));
        child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-MAX_OUTPUT_BYTES)));
        child.on('error', reject);
        child.on('close', (code, signal) => resolve({ exitCode: code, signal, stdout, stderr, truncated: false }));
      }),
    readFile: async (_target, p) => fs.readFile(inside(root, p)),
    stat: async (_target, p) => {
      const st = await fs.stat(inside(root, p)).catch(() => null);
      return st && { size: st.size, mode: st.mode & 0o7777, isFile: st.isFile(), isDirectory: st.isDirectory(), isSymbolicLink: false, mtime: st.mtime };
    },
    writeFile: unavailable,
    uploadFile: unavailable,
    downloadFile: unavailable,
    mkdirp: unavailable,
    hostKey: unavailable,
    machineId: unavailable,
    stats: () => ({ connections: 0, sessions: 0 }) as unknown as ReturnType<SshClient['stats']>,
    close: async () => {},
  };
}

/** The read-only tools, each refusing paths outside the checkout before it runs. */
export function readOnlyTools(root: string): AgentTool[] {
  return [readFileTool, listDirectoryTool, globTool, searchTextTool].map((tool) => ({
    ...tool,
    async run(ssh, target, cwd, input, signal) {
      const pattern = (input as { pattern?: unknown } | null)?.pattern;
      if (tool.name === 'glob' && typeof pattern === 'string' && (pattern.startsWith('/') || pattern.split('/').includes('..'))) {
        return { isError: true, output: 'glob patterns are relative to the repository and may not climb out of it with ..' };
      }
      const p = (input as { path?: unknown } | null)?.path;
      if (typeof p === 'string') {
        try {
          inside(root, path.resolve(cwd, p));
        } catch (err) {
          return { isError: true, output: (err as Error).message };
        }
      }
      return tool.run(ssh, target, cwd, input, signal);
    },
  }));
}
