import { createHash } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { PresentedHostKey } from './host-keys.ts';
import { normalizeFingerprint } from './host-keys.ts';

/**
 * How to reach one machine. The host key is either pinned (`hostKeyFingerprint`) or trusted on
 * first use through `onFirstHostKey`, which must persist the key: the pool keeps the accepted
 * fingerprint for later reconnects of this target, and a different key afterwards is refused.
 * With neither, every connection is refused: a host key is never accepted unchecked.
 */
export interface SshTarget {
  host: string;
  /** Default 22. */
  port?: number;
  username: string;
  /** OpenSSH or PEM private key. */
  privateKey: string | Buffer;
  passphrase?: string;
  /** `SHA256:...` as `ssh-keygen -l` prints it. */
  hostKeyFingerprint?: string;
  /** Trust on first use: store the key and resolve (or return false / throw to refuse). */
  onFirstHostKey?: (key: PresentedHostKey) => void | boolean | Promise<void | boolean>;
  /** Sessions at once on this machine: sshd's MaxSessions (default 10). Extra calls queue. */
  maxSessions?: number;
  /**
   * A stream to speak SSH over instead of a TCP connection to host:port, e.g. a channel of the
   * agent gateway's reverse tunnel. `host` and `port` then only name the machine in errors (and
   * in the pool key); `dial` is called whenever a connection has to be opened.
   */
  dial?: (signal: AbortSignal) => Promise<Duplex>;
}

const DEFAULT_SSH_PORT = 22;
export const DEFAULT_MAX_SESSIONS = 10;

export function portOf(target: SshTarget): number {
  return target.port ?? DEFAULT_SSH_PORT;
}

/**
 * Pool key: one connection per (user, address, credential, expected host key). A re-pinned
 * fingerprint or a rotated private key therefore gets a fresh, freshly verified connection.
 */
export function targetKey(target: SshTarget): string {
  const credential = createHash('sha256').update(target.privateKey).digest('hex').slice(0, 16);
  const pin = target.hostKeyFingerprint ? normalizeFingerprint(target.hostKeyFingerprint) : 'tofu';
  return `${target.username}@${target.host}:${portOf(target)}#${credential}#${pin}`;
}
