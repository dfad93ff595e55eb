import { createHash, createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import ssh2 from 'ssh2';
import { fingerprintOf } from './host-keys.ts';

export interface SshKeyPair {
  /** OpenSSH private key (PEM-armoured `OPENSSH PRIVATE KEY`); store it encrypted. */
  privateKey: string;
  /** The `authorized_keys` line: `ssh-ed25519 AAAA... comment`. */
  publicKey: string;
  /** `SHA256:...`, as `ssh-keygen -l` prints it. */
  fingerprint: string;
}

/**
 * A new ed25519 key pair, e.g. an organization's control-plane key. Not ssh2's
 * `generateKeyPairSync`: it drops a leading zero byte of the public key, so about one key in 256
 * comes out malformed (unreadable by ssh2 and OpenSSH alike).
 */
export function generateKeyPair(comment = 'agentplane'): SshKeyPair {
  return ed25519KeyPair(randomBytes(32), comment);
}

// DER prefix of a PKCS#8 ed25519 private key; the 32-byte seed follows it.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The ed25519 key pair of a 32-byte seed (deterministic: the same seed gives the same file). */
export function ed25519KeyPair(seed: Buffer, comment: string): SshKeyPair {
  if (seed.length !== 32) throw new TypeError('an ed25519 seed is 32 bytes');
  const der = createPublicKey(createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' })).export({
    format: 'der',
    type: 'spki',
  });
  const privateKey = openSshPrivateKey(seed, der.subarray(der.length - 32), comment);
  return { privateKey, ...publicKeyOf(privateKey, comment) };
}

/** The public half of a stored private key, as an `authorized_keys` line and its fingerprint. */
export function publicKeyOf(privateKey: string | Buffer, comment?: string): { publicKey: string; fingerprint: string } {
  const parsed = ssh2.utils.parseKey(privateKey);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key instanceof Error) throw new TypeError(`not a usable private key: ${key instanceof Error ? key.message : 'empty'}`);
  const blob = key.getPublicSSH();
  const line = `${key.type} ${blob.toString('base64')}${comment ? ` ${comment}` : ''}`;
  return { publicKey: line, fingerprint: fingerprintOf(blob) };
}

/** The unencrypted `openssh-key-v1` format sshd reads (PROTOCOL.key in the OpenSSH sources). */
function openSshPrivateKey(seed: Buffer, pub: Buffer, comment: string): string {
  const type = Buffer.from('ssh-ed25519');
  const publicBlob = sshString(Buffer.concat([sshString(type), sshString(pub)]));
  // The check integer only detects a wrong passphrase; derived from the seed, so the file is deterministic.
  const check = createHash('sha256').update(seed).digest().subarray(0, 4);
  let section = Buffer.concat([check, check, sshString(type), sshString(pub), sshString(Buffer.concat([seed, pub])), sshString(Buffer.from(comment))]);
  const pad = (8 - (section.length % 8)) % 8;
  section = Buffer.concat([section, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))]);
  const body = Buffer.concat([
    Buffer.from('openssh-key-v1\0'),
    sshString(Buffer.from('none')),
    sshString(Buffer.from('none')),
    sshString(Buffer.alloc(0)),
    uint32(1),
    publicBlob,
    sshString(section),
  ]);
  const lines = body.toString('base64').match(/.{1,70}/g) ?? [];
  return ['-----BEGIN OPENSSH PRIVATE KEY-----', ...lines, '-----END OPENSSH PRIVATE KEY-----', ''].join('\n');
}

function uint32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

function sshString(data: Buffer): Buffer {
  return Buffer.concat([uint32(data.length), data]);
}
