import { secretBytes } from '../../lib/ids.ts';

/** A Standard Webhooks signing secret: `whsec_` and 32 random bytes, base64 (what `standardwebhooks` reads). */
export function newSigningSecret(): string {
  return `whsec_${secretBytes(32).toString('base64')}`;
}
