import { exec, type ExecOptions, type ExecResult, type RemoteKill } from './exec.ts';
import { machineId } from './machine-id.ts';
import { ConnectionPool, type PoolOptions, type PoolStats } from './pool.ts';
import { downloadFile, mkdirp, readFile, stat, uploadFile, writeFile, type FileOptions, type RemoteStat } from './sftp.ts';
import type { PresentedHostKey } from './host-keys.ts';
import type { SshTarget } from './target.ts';

export interface SshClientOptions extends PoolOptions {
  /** How timeouts and cancellation stop remote processes; default `auto` (see RemoteKill). */
  remoteKill?: RemoteKill;
}

/** The one way the control plane talks to machines: pooled connections, commands and files. */
export interface SshClient {
  exec(target: SshTarget, command: string, opts?: ExecOptions): Promise<ExecResult>;
  writeFile(target: SshTarget, remotePath: string, data: string | Buffer, opts?: FileOptions & { mode?: number }): Promise<void>;
  readFile(target: SshTarget, remotePath: string, opts?: FileOptions): Promise<Buffer>;
  uploadFile(target: SshTarget, localPath: string, remotePath: string, opts?: FileOptions): Promise<void>;
  downloadFile(target: SshTarget, remotePath: string, localPath: string, opts?: FileOptions): Promise<void>;
  mkdirp(target: SshTarget, remotePath: string, opts?: FileOptions & { mode?: number }): Promise<void>;
  stat(target: SshTarget, remotePath: string, opts?: FileOptions): Promise<RemoteStat | null>;
  /** Connects (verifying or trusting the host key) and returns the key the machine presented. */
  hostKey(target: SshTarget, opts?: { signal?: AbortSignal }): Promise<PresentedHostKey>;
  /** The machine's stable id as a UUID (see machine-id.ts). */
  machineId(target: SshTarget, opts?: { signal?: AbortSignal }): Promise<string>;
  stats(): PoolStats;
  /** Closes every connection; later calls fail with `connection_lost`. */
  close(): Promise<void>;
}

export function createSshClient(opts: SshClientOptions = {}): SshClient {
  const pool = new ConnectionPool(opts);
  const remoteKill = opts.remoteKill ?? 'auto';
  return {
    exec: (target, command, o) => exec(pool, remoteKill, target, command, o),
    writeFile: (target, p, data, o) => writeFile(pool, target, p, data, o),
    readFile: (target, p, o) => readFile(pool, target, p, o),
    uploadFile: (target, local, remote, o) => uploadFile(pool, target, local, remote, o),
    downloadFile: (target, remote, local, o) => downloadFile(pool, target, remote, local, o),
    mkdirp: (target, p, o) => mkdirp(pool, target, p, o),
    stat: (target, p, o) => stat(pool, target, p, o),
    hostKey: (target, o) => pool.session(target, o?.signal, async (conn) => conn.hostKey),
    machineId: (target, o) => machineId(pool, remoteKill, target, o),
    stats: () => pool.stats(),
    close: () => pool.close(),
  };
}
