/**
 * Where the evaluator does its repository work: a scratch directory on the control plane
 * (local-workspace.ts) or on a computer over SSH (ssh-workspace.ts). Paths are relative to the
 * workspace's root directory; commands run through `sh -c`.
 */
export interface CommandResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  /** Directory relative to the workspace root; default the root. */
  cwd?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface RepoWorkspace {
  /** Where this workspace lives, for messages: `local` or the computer's address. */
  readonly where: string;
  exec(command: string, opts?: ExecOptions): Promise<CommandResult>;
  /** A file's bytes, or undefined when there is no such file. */
  readFile(path: string, opts?: { signal?: AbortSignal }): Promise<Buffer | undefined>;
  /** Files git sees in `dir` (tracked, plus untracked ones not ignored), relative to `dir`. */
  listFiles(dir: string, opts?: { signal?: AbortSignal }): Promise<string[]>;
}

/** A workspace whose scratch directory is removed by `dispose`. */
export interface ScratchWorkspace extends RepoWorkspace {
  dispose(): Promise<void>;
}

/** The one `git ls-files` both workspaces run: NUL-separated, so any file name survives. */
export const LIST_FILES_COMMAND = 'git ls-files -z --cached --others --exclude-standard';

export function parseFileList(stdout: string): string[] {
  return [...new Set(stdout.split('\0').filter(Boolean))].sort();
}
