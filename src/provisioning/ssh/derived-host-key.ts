import { createHash, createPrivateKey, createPublicKey, hkdfSync } from 'node:crypto';
import { publicKeyOf, type SshKeyPair } from './keys.ts';

// DER prefix of a PKCS#8 ed25519 private key; the 32-byte seed follows it.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SALT = 'agentplane ssh host key v1';

/**
 * The ed25519 host key of one machine, derived from a long-lived secret and the machine's id
 * (HKDF-SHA256). Every `pulumi up` of a computer's stack — create, pause, resume — yields the
 * same key with no state and no random-number plugin, so the pinned host key stays valid, and
 * no two computers share one. The secret must be the control plane's own (its encryption key).
 */
export function deriveHostKey(secret: Buffer, machineId: string, comment = machineId): SshKeyPair {
  if (secret.length < 32) throw new TypeError('host key secret must be at least 32 bytes');
  const seed = Buffer.from(hkdfSync('sha256', secret, SALT, machineId, 32));
  const der = createPublicKey(createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' }))
    .export({ format: 'der', type: 'spki' });
  const pub = der.subarray(der.length - 32);
  const privateKey = openSshPrivateKey(seed, pub, comment);
  return { privateKey, ...publicKeyOf(privateKey, comment) };
}

/** The unencrypted `openssh-key-v1` format sshd reads (PROTOCOL.key in the OpenSSH sources). */
function openSshPrivateKey(seed: Buffer, pub: Buffer, comment: string): string {
  const type = Buffer.from('ssh-ed25519');
  const publicBlob = sshString(Buffer.concat([sshString(type), sshString(pub)]));
  // The check integer only detects a wrong passphrase; derived from the seed, so the file is deterministic.
  const check = createHash('sha256').update(seed).digest().subarray(0, 4);
  let section = Buffer.concat([
    check,
    check,
    sshString(type),
    sshString(pub),
    sshString(Buffer.concat([seed, pub])),
    sshString(Buffer.from(comment)),
  ]);
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
