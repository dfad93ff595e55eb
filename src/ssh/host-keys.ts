import { createHash } from 'node:crypto';

/** The host key a server presented during the handshake. */
export interface PresentedHostKey {
  /** OpenSSH's SHA-256 fingerprint, as `ssh-keygen -l` prints it: `SHA256:<base64, no padding>`. */
  fingerprint: string;
  /** Key type, e.g. `ssh-ed25519`. */
  algorithm: string;
  /** The key as an OpenSSH public key line (`ssh-ed25519 AAAA...`), the form known_hosts stores. */
  publicKey: string;
}

export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** Reads the key type from an SSH wire-format public key (string name, then key data). */
function algorithmOf(blob: Buffer): string {
  if (blob.length < 4) return 'unknown';
  const len = blob.readUInt32BE(0);
  return blob.subarray(4, 4 + len).toString('latin1');
}

export function describeHostKey(blob: Buffer): PresentedHostKey {
  const algorithm = algorithmOf(blob);
  return { fingerprint: fingerprintOf(blob), algorithm, publicKey: `${algorithm} ${blob.toString('base64')}` };
}

/** Accepts `SHA256:abc`, `sha256:abc` and a bare `abc` (with or without base64 padding). */
export function normalizeFingerprint(fingerprint: string): string {
  const bare = fingerprint
    .trim()
    .replace(/^sha256:/i, '')
    .replace(/=+$/, '');
  return `SHA256:${bare}`;
}
