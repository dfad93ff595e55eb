import { randomBytes, randomUUID } from 'node:crypto';

/** The one source of identifiers and secrets. */

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** Random base36 string of `length` characters (unbiased: rejection sampling). */
export function randomToken(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 252 && out.length < length) out += ALPHABET[byte % 36];
    }
  }
  return out;
}

/** Resource id with a readable type prefix, e.g. `org_3k2j...`. 20 chars of base36 ≈ 103 bits. */
export function newId(prefix: string): string {
  return `${prefix}_${randomToken(20)}`;
}

export function newUuid(): string {
  return randomUUID();
}
