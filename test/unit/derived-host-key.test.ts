import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deriveHostKey } from '../../src/ssh/derived-host-key.ts';

const secret = Buffer.from('0123456789abcdef0123456789abcdef');
const dir = mkdtempSync(path.join(os.tmpdir(), 'derived-host-key-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Asks OpenSSH itself: the key file sshd will load, read by ssh-keygen. */
function sshKeygen(privateKey: string, ...args: string[]): string {
  const file = path.join(dir, `key-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, privateKey, { mode: 0o600 });
  return execFileSync('ssh-keygen', [...args, '-f', file], { encoding: 'utf8' }).trim();
}

describe('derived host keys', () => {
  const key = deriveHostKey(secret, 'cmp_abc');

  it('writes an OpenSSH private key whose public half and fingerprint OpenSSH agrees with', () => {
    expect(key.privateKey).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----\n[\s\S]+\n-----END OPENSSH PRIVATE KEY-----\n$/);
    expect(sshKeygen(key.privateKey, '-y')).toBe(key.publicKey);
    expect(sshKeygen(key.privateKey, '-l', '-E', 'sha256')).toBe(`256 ${key.fingerprint} cmp_abc (ED25519)`);
  });

  it('is the same key for the same secret and id, another for another id or secret', () => {
    expect(deriveHostKey(secret, 'cmp_abc')).toEqual(key);
    expect(deriveHostKey(secret, 'cmp_abd').publicKey).not.toBe(key.publicKey);
    expect(deriveHostKey(Buffer.alloc(32, 1), 'cmp_abc').publicKey).not.toBe(key.publicKey);
  });

  it('refuses a secret too short to derive keys from', () => {
    expect(() => deriveHostKey(Buffer.alloc(16), 'cmp_abc')).toThrow(/at least 32 bytes/);
  });
});
