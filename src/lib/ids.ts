import { randomBytes, randomUUID } from 'node:crypto';

/** The one source of identifiers and secrets. */

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * Random bytes are drawn from the CSPRNG a few kilobytes at a time and each handed out once, as
 * `randomUUID` does: one call per request id cost more than the rest of the id.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

function randomByte(): number {
  if (used === pool.length) {
    pool = randomBytes(POOL_BYTES);
    used = 0;
  }
  return pool[used++]!;
}

/** Random base36 string of `length` characters (unbiased: rejection sampling). */
export function randomToken(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte < 252) out += ALPHABET[byte % 36];
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

/** Fresh random bytes for a secret (signing keys), straight from the CSPRNG. */
export function secretBytes(length: number): Buffer {
  return randomBytes(length);
}
