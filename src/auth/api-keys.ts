import { createHash, timingSafeEqual } from 'node:crypto';
import { randomToken } from '../lib/ids.ts';

/** Every agentplane API key starts with this, so scanners and humans recognise one. */
const API_KEY_PREFIX = 'apk_';
const SECRET_LENGTH = 40; // base36: about 206 bits of entropy
const FINGERPRINT_LENGTH = 6;
const API_KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9a-z]{${SECRET_LENGTH}}$`);

export interface NewApiKey {
  value: string;
  secretHash: string;
  fingerprint: string;
}

export function generateApiKey(): NewApiKey {
  const value = API_KEY_PREFIX + randomToken(SECRET_LENGTH);
  return { value, secretHash: hashApiKey(value), fingerprint: fingerprintOf(value) };
}

export function looksLikeApiKey(credential: string): boolean {
  return API_KEY_PATTERN.test(credential);
}

export function hashApiKey(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** A short suffix for display; it cannot be turned back into the key. */
export function fingerprintOf(value: string): string {
  return value.slice(-FINGERPRINT_LENGTH);
}

export function hashesEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'hex');
  const bb = Buffer.from(b, 'hex');
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
