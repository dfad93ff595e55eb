export { createSshClient, type SshClient } from './client.ts';
export {
  AuthFailed,
  Cancelled,
  ConnectionLost,
  HostKeyMismatch,
  SftpFailed,
  SshError,
  SshTimeout,
  Unreachable,
} from './errors.ts';
export type { ExecResult, RemoteKill } from './exec.ts';
export { describeHostKey, fingerprintOf, type PresentedHostKey } from './host-keys.ts';
export { ed25519KeyPair, generateKeyPair, publicKeyOf } from './keys.ts';
export { hexToUuid } from './machine-id.ts';
export { shellQuote } from './command.ts';
export { isTransientSshError, SSH_RETRY } from './retry.ts';
export { type SshTarget } from './target.ts';
