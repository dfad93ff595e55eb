import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Encrypts secrets the control plane must read back (SSH private keys, source-control tokens)
 * with AES-256-GCM. Ciphertexts read `v1.<iv>.<tag>.<data>` (base64url), so a later key or
 * algorithm can be told apart.
 */
export interface SecretBox {
  seal(plaintext: string): string;
  open(ciphertext: string): string;
  /**
   * A secret derived from the key for one purpose (HKDF-SHA256, base64url), e.g. the Pulumi
   * stacks' passphrase: every replica sharing the key derives the same one.
   */
  derive(purpose: string): string;
}

const VERSION = 'v1';
const KEY_BYTES = 32;

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== KEY_BYTES) throw new Error(`encryption key must be ${KEY_BYTES} bytes, got ${key.length}`);
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [VERSION, iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
    },
    open(ciphertext) {
      const [version, iv, tag, data] = ciphertext.split('.');
      if (version !== VERSION || iv === undefined || tag === undefined || data === undefined) {
        throw new Error('not a ciphertext this control plane wrote');
      }
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      try {
        return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new Error('cannot decrypt a stored secret: AGENTPLANE_ENCRYPTION_KEY differs from the key it was written with');
      }
    },
    derive(purpose) {
      return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `agentplane ${purpose}`, KEY_BYTES)).toString('base64url');
    },
  };
}

/**
 * The encryption key: `AGENTPLANE_ENCRYPTION_KEY` (32 bytes, base64) when set — required when
 * several replicas share a database — else `<dataDir>/encryption.key`, created on first use
 * (mode 0600) for a single-machine install.
 */
export function loadEncryptionKey(opts: { configured?: string; dataDir: string }): Buffer {
  if (opts.configured) return parseKey(opts.configured, 'AGENTPLANE_ENCRYPTION_KEY');
  const file = path.join(opts.dataDir, 'encryption.key');
  fs.mkdirSync(opts.dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return parseKey(fs.readFileSync(file, 'utf8').trim(), file);
}

function parseKey(value: string, where: string): Buffer {
  const key = Buffer.from(value, 'base64');
  if (key.length !== KEY_BYTES) throw new Error(`invalid configuration: ${where}: must be ${KEY_BYTES} bytes, base64-encoded`);
  return key;
}
