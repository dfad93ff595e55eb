import path from 'node:path/posix';
import { SftpFailed, shellQuote, type SshClient, type SshTarget } from '../provisioning/ssh/index.ts';
import { LIST_FILES_COMMAND, parseFileList, type ExecOptions, type ScratchWorkspace } from './workspace.ts';

const DEFAULT_TIMEOUT_MS = 10 * 60_000;
// SFTP status codes: no such file, and the generic failure a directory read gives.
const SFTP_NO_SUCH_FILE = 2;
const SFTP_FAILURE = 4;

/**
 * A scratch directory on a computer (`mktemp -d` there), worked through the pooled SSH client;
 * `dispose` removes it.
 */
export async function createSshScratchWorkspace(ssh: SshClient, target: SshTarget, opts: { signal?: AbortSignal } = {}): Promise<ScratchWorkspace> {
  const made = await ssh.exec(target, 'mktemp -d "${TMPDIR:-/tmp}/agentplane-eval-XXXXXXXX"', { signal: opts.signal, timeoutMs: 60_000 });
  const root = made.stdout.trim();
  if (made.exitCode !== 0 || !root.startsWith('/')) {
    throw new Error(`cannot create a scratch directory on ${target.host}: ${made.stderr.trim() || 'mktemp failed'}`);
  }
  const inside = (relative: string) => {
    const full = path.resolve(root, relative);
    if (full !== root && !full.startsWith(`${root}/`)) throw new Error(`path ${relative} leaves the workspace`);
    return full;
  };
  const exec = async (command: string, o: ExecOptions = {}) => {
    const res = await ssh.exec(target, `GIT_TERMINAL_PROMPT=0 ${command}`, {
      cwd: inside(o.cwd ?? '.'),
      timeoutMs: o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      signal: o.signal,
    });
    return { exitCode: res.exitCode, stdout: res.stdout, stderr: res.stderr };
  };
  return {
    where: `${target.username}@${target.host}`,
    exec,
    async readFile(file, o = {}) {
      try {
        return await ssh.readFile(target, inside(file), { signal: o.signal });
      } catch (err) {
        if (err instanceof SftpFailed && (err.code === SFTP_NO_SUCH_FILE || err.code === SFTP_FAILURE)) return undefined;
        throw err;
      }
    },
    async listFiles(dir, o = {}) {
      const res = await exec(LIST_FILES_COMMAND, { cwd: dir, signal: o.signal });
      if (res.exitCode !== 0) throw new Error(`listing files in ${dir} on ${target.host} failed: ${res.stderr.trim()}`);
      return parseFileList(res.stdout);
    },
    async dispose() {
      await ssh.exec(target, `rm -rf ${shellQuote(root)}`, { timeoutMs: 120_000 });
    },
  };
}
