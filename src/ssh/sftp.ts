import path from 'node:path/posix';
import type { SFTPWrapper, Stats } from 'ssh2';
import type { Connection } from './connection.ts';
import { ConnectionLost, SftpFailed, SshError } from './errors.ts';
import { abortedError, openChannel, type ConnectionPool } from './pool.ts';
import { portOf, type SshTarget } from './target.ts';

export interface RemoteStat {
  size: number;
  /** Permission bits, e.g. 0o644. */
  mode: number;
  isFile: boolean;
  isDirectory: boolean;
  isSymbolicLink: boolean;
  mtime: Date;
}

export interface FileOptions {
  signal?: AbortSignal;
}

/** SFTP status codes (draft-ietf-secsh-filexfer-02). */
const SFTP_NO_SUCH_FILE = 2;
const SFTP_REASONS: Record<number, string> = {
  2: 'no such file or directory',
  3: 'permission denied',
  4: 'failure (is it a directory, or does it already exist?)',
};

type Op = (sftp: SFTPWrapper, fail: (op: string, remotePath: string) => (err: unknown) => SshError) => Promise<unknown>;

/** Opens an SFTP session in a session slot, runs `op` and closes the session. */
async function withSftp<T>(pool: ConnectionPool, target: SshTarget, opts: FileOptions, op: Op): Promise<T> {
  const host = target.host;
  const port = portOf(target);
  const signal = opts.signal;
  if (signal?.aborted) throw abortedError(target, signal);
  return pool.session(target, signal, async (conn: Connection) => {
    const sftp = await openChannel<SFTPWrapper>(target, conn, (cb) => conn.client.sftp(cb));
    const fail = (opName: string, remotePath: string) => (err: unknown) => {
      if (err instanceof SshError) return err;
      if (conn.closed) return new ConnectionLost({ host, port, reason: conn.closeReason ?? 'closed', cause: err });
      if (signal?.aborted) return abortedError(target, signal);
      const code = (err as { code?: unknown }).code;
      const numeric = typeof code === 'number' ? code : undefined;
      const reason = (numeric !== undefined && SFTP_REASONS[numeric]) || (err instanceof Error ? err.message : String(err));
      return new SftpFailed({ host, port, op: opName, path: remotePath, reason, code: numeric, cause: err });
    };
    const closed = new Promise<never>((_, reject) => {
      const off = conn.onClose((reason) => reject(new ConnectionLost({ host, port, reason })));
      sftp.once('close', off);
    });
    const aborted = new Promise<never>((_, reject) => {
      signal?.addEventListener('abort', () => reject(abortedError(target, signal)), { once: true });
    });
    closed.catch(() => {});
    aborted.catch(() => {});
    try {
      return (await Promise.race([op(sftp, fail), closed, aborted])) as T;
    } finally {
      await new Promise<void>((resolve) => {
        if (conn.closed) return resolve();
        sftp.once('close', () => resolve());
        sftp.end();
        setTimeout(resolve, 2_000).unref();
      });
    }
  });
}

function call<T>(fn: (cb: (err: Error | undefined | null, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));
}

export function writeFile(
  pool: ConnectionPool,
  target: SshTarget,
  remotePath: string,
  data: string | Buffer,
  opts: FileOptions & { mode?: number } = {},
): Promise<void> {
  return withSftp(pool, target, opts, (sftp, fail) =>
    call<void>((cb) => sftp.writeFile(remotePath, data, opts.mode === undefined ? {} : { mode: opts.mode }, cb)).catch((e: unknown) => {
      throw fail('write', remotePath)(e);
    }),
  );
}

export function readFile(pool: ConnectionPool, target: SshTarget, remotePath: string, opts: FileOptions = {}): Promise<Buffer> {
  return withSftp(pool, target, opts, (sftp, fail) =>
    call<Buffer>((cb) => sftp.readFile(remotePath, cb)).catch((e: unknown) => {
      throw fail('read', remotePath)(e);
    }),
  );
}

export function uploadFile(pool: ConnectionPool, target: SshTarget, localPath: string, remotePath: string, opts: FileOptions = {}): Promise<void> {
  return withSftp(pool, target, opts, (sftp, fail) =>
    call<void>((cb) => sftp.fastPut(localPath, remotePath, cb)).catch((e: unknown) => {
      throw fail('upload to', remotePath)(e);
    }),
  );
}

export function downloadFile(pool: ConnectionPool, target: SshTarget, remotePath: string, localPath: string, opts: FileOptions = {}): Promise<void> {
  return withSftp(pool, target, opts, (sftp, fail) =>
    call<void>((cb) => sftp.fastGet(remotePath, localPath, cb)).catch((e: unknown) => {
      throw fail('download', remotePath)(e);
    }),
  );
}

function toRemoteStat(s: Stats): RemoteStat {
  return {
    size: s.size,
    mode: s.mode & 0o7777,
    isFile: s.isFile(),
    isDirectory: s.isDirectory(),
    isSymbolicLink: s.isSymbolicLink(),
    mtime: new Date(s.mtime * 1000),
  };
}

function isMissing(err: unknown): boolean {
  return (err as { code?: unknown }).code === SFTP_NO_SUCH_FILE;
}

/** `null` when nothing exists at `remotePath`. Follows symbolic links. */
export function stat(pool: ConnectionPool, target: SshTarget, remotePath: string, opts: FileOptions = {}): Promise<RemoteStat | null> {
  return withSftp(pool, target, opts, async (sftp, fail) => {
    try {
      return toRemoteStat(await call<Stats>((cb) => sftp.stat(remotePath, cb)));
    } catch (e) {
      if (isMissing(e)) return null;
      throw fail('stat', remotePath)(e);
    }
  });
}

/** `mkdir -p`: creates `remotePath` and its missing parents; an existing directory is fine. */
export function mkdirp(pool: ConnectionPool, target: SshTarget, remotePath: string, opts: FileOptions & { mode?: number } = {}): Promise<void> {
  return withSftp(pool, target, opts, async (sftp, fail) => {
    const missing: string[] = [];
    let dir = path.normalize(remotePath);
    for (;;) {
      try {
        const s = await call<Stats>((cb) => sftp.stat(dir, cb));
        if (!s.isDirectory()) throw new Error(`${dir} exists and is not a directory`);
        break;
      } catch (e) {
        if (!isMissing(e)) throw fail('mkdir -p', remotePath)(e);
        missing.unshift(dir);
        const parent = path.dirname(dir);
        if (parent === dir) break;
        dir = parent;
      }
    }
    for (const d of missing) {
      try {
        await call<void>((cb) => sftp.mkdir(d, opts.mode === undefined ? {} : { mode: opts.mode }, cb));
      } catch (e) {
        // Someone else may have created it meanwhile.
        const s = await call<Stats>((cb) => sftp.stat(d, cb)).catch(() => undefined);
        if (!s?.isDirectory()) throw fail('mkdir -p', remotePath)(e);
      }
    }
  });
}
