import { shellQuote, type ExecResult } from '../provisioning/ssh/index.ts';

/** How a command ended: exit code or signal, the ends of stdout and stderr; as the SSH client reports it. */
export type { ExecResult };

/**
 * Where the agent's tools act: a working directory on some machine, with commands and files.
 * Sessions give the agent their computer over SSH (ssh-tool-host.ts); the wiki gives it a
 * directory of the control plane's own (local-tool-host.ts). Paths are POSIX and absolute (the
 * tools resolve the model's relative paths against `cwd` first).
 */
export interface ToolHost {
  /** Absolute working directory: where commands run and relative paths start. */
  readonly cwd: string;
  /**
   * Runs a POSIX sh command line in `opts.cwd`, else in `cwd`. Resolves with how it exited; a
   * timeout rejects with `ExecTimedOut`, an abort of `opts.signal` rejects too (the caller knows
   * it aborted). Either way the command is killed.
   */
  exec(command: string, opts?: ExecOptions): Promise<ExecResult>;
  readFile(path: string, opts?: FileOptions): Promise<Buffer>;
  /** Creates or replaces the file, and its missing parent directories. */
  writeFile(path: string, content: string, opts?: FileOptions): Promise<void>;
  /** Null when nothing is at `path`. */
  stat(path: string, opts?: FileOptions): Promise<HostStat | null>;
  /** The directory's long listing (`ls -lA`) for the model: names, sizes, permissions and modification times. */
  list(dir: string, opts?: FileOptions): Promise<string>;
}

interface FileOptions {
  signal?: AbortSignal;
}

interface ExecOptions {
  cwd?: string;
  /** Kill the command after this long; the call rejects with `ExecTimedOut`. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Bytes of stdout and of stderr kept in the result (the last ones). Default 4 MiB each. */
  maxOutputBytes?: number;
  /** Output as it arrives, raw bytes per stream. */
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
}

interface HostStat {
  size: number;
  isFile: boolean;
  isDirectory: boolean;
}

/** A command ran out of its `timeoutMs` and was killed; the message says which and when. */
export class ExecTimedOut extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ExecTimedOut';
  }
}

export const DEFAULT_MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

const LISTING_TIMEOUT_MS = 60_000;
const MAX_LISTING_BYTES = 256 * 1024;

/** `list` for hosts that have `ls`: the listing, or an Error with what ls said. */
export async function lsListing(exec: ToolHost['exec'], dir: string, signal?: AbortSignal): Promise<string> {
  const res = await exec(`LC_ALL=C ls -lA -- ${shellQuote(dir)}`, { signal, timeoutMs: LISTING_TIMEOUT_MS, maxOutputBytes: MAX_LISTING_BYTES });
  if (res.exitCode !== 0) throw new Error(res.stderr.trim() || `ls exited with ${res.exitCode}`);
  return res.stdout.trimEnd();
}
