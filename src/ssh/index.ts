export { createSshClient, type SshClient, type SshClientOptions } from './client.ts';
export {
  AuthFailed,
  Cancelled,
  ChannelRefused,
  ConnectionLost,
  HostKeyMismatch,
  HostKeyRejected,
  SftpFailed,
  SshError,
  SshTimeout,
  Unreachable,
  type SshErrorKind,
} from './errors.ts';
export type { ExecOptions, ExecResult, RemoteKill } from './exec.ts';
export { describeHostKey, fingerprintOf, normalizeFingerprint, type PresentedHostKey } from './host-keys.ts';
export { ed25519KeyPair, generateKeyPair, publicKeyOf, type SshKeyPair } from './keys.ts';
export { hexToUuid } from './machine-id.ts';
export type { PoolOptions, PoolStats } from './pool.ts';
export type { FileOptions, RemoteStat } from './sftp.ts';
export { shellQuote } from './command.ts';
export { isTransientSshError, SSH_RETRY } from './retry.ts';
export { DEFAULT_MAX_SESSIONS, DEFAULT_SSH_PORT, type SshTarget } from './target.ts';
