import { describe, expect, it } from 'vitest';
import { fingerprintOf, generateApiKey, hashApiKey, hashesEqual, looksLikeApiKey } from '../../src/auth/api-keys.ts';

describe('API keys', () => {
  it('are high-entropy, prefixed, and stored only as a hash with a short suffix fingerprint', () => {
    const keys = Array.from({ length: 200 }, generateApiKey);
    expect(new Set(keys.map((k) => k.value)).size).toBe(200);
    for (const k of keys) {
      expect(k.value).toMatch(/^apk_[0-9a-z]{40}$/);
      expect(looksLikeApiKey(k.value)).toBe(true);
      expect(k.secretHash).toBe(hashApiKey(k.value));
      expect(k.secretHash).not.toContain(k.value.slice(4));
      expect(k.value.endsWith(k.fingerprint)).toBe(true);
      expect(k.fingerprint).toHaveLength(6);
    }
    expect(fingerprintOf('apk_abcdef123456')).toBe('123456');
  });

  it('compares hashes in constant time and tolerates bad input', () => {
    const a = hashApiKey('apk_a');
    expect(hashesEqual(a, a)).toBe(true);
    expect(hashesEqual(a, hashApiKey('apk_b'))).toBe(false);
    expect(hashesEqual(a, 'abcd')).toBe(false);
    expect(looksLikeApiKey('fk-something')).toBe(false);
  });
});
