import { hkdfSync } from 'node:crypto';
import { ed25519KeyPair, type SshKeyPair } from './keys.ts';

const SALT = 'agentplane ssh host key v1';

/**
 * The ed25519 host key of one machine, derived from a long-lived secret and the machine's id
 * (HKDF-SHA256). Every `pulumi up` of a computer's stack — create, pause, resume — yields the
 * same key with no state and no random-number plugin, so the pinned host key stays valid, and
 * no two computers share one. The secret must be the control plane's own (its encryption key).
 */
export function deriveHostKey(secret: Buffer, machineId: string, comment = machineId): SshKeyPair {
  if (secret.length < 32) throw new TypeError('host key secret must be at least 32 bytes');
  return ed25519KeyPair(Buffer.from(hkdfSync('sha256', secret, SALT, machineId, 32)), comment);
}
