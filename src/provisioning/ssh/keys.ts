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

// ssh2 1.17.0's generateKeyPairSync('ed25519') writes, about once in 400 calls, a private key its
// own parser rejects ("Malformed OpenSSH private key"); such a pair is drawn again.
const KEY_ATTEMPTS = 5;

/** A new ed25519 key pair, e.g. an organization's control-plane key or a managed computer's own. */
export function generateKeyPair(comment = 'agentplane'): SshKeyPair {
  for (let attempt = 1; ; attempt++) {
    const pair = ssh2.utils.generateKeyPairSync('ed25519', { comment });
    try {
      return { privateKey: pair.private, ...publicKeyOf(pair.private, comment) };
    } catch (err) {
      if (attempt >= KEY_ATTEMPTS) throw err;
    }
  }
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
