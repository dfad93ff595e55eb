import ssh2 from 'ssh2';
import { describeHostKey, type PresentedHostKey } from '../../ssh/host-keys.ts';

/**
 * Parses an OpenSSH public key line (`ssh-ed25519 AAAA... comment`), as an agent registers its
 * client and host keys, into the form the gateway and the SSH layer compare: the same shape as
 * a key presented during a handshake, so `fingerprint`s match. Throws a TypeError naming the
 * problem for anything else (a private key, a truncated line).
 */
export function parsePublicKeyLine(line: string): PresentedHostKey {
  const parsed = ssh2.utils.parseKey(line.trim());
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key instanceof Error) throw new TypeError(`not an OpenSSH public key line: ${key instanceof Error ? key.message : 'empty'}`);
  if (key.isPrivateKey()) throw new TypeError('expected a public key line, got a private key');
  return describeHostKey(key.getPublicSSH());
}
