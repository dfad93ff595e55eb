import { createHmac, timingSafeEqual } from 'node:crypto';
import { Unauthorized } from '../lib/errors.ts';

/**
 * Checks a forge's push webhook against the secret it was given, by the forge's own scheme (Gitea
 * and Forgejo: hex HMAC-SHA256 of the body; GitHub: the same as `sha256=...`). Throws 401 with
 * `refused` when the signature is missing or wrong (or `secret` is null: none was ever made).
 */
export function verifyForgePush(secret: string | null, header: (name: string) => string | undefined, body: Buffer, refused: string): void {
  const sent = header('x-gitea-signature') ?? header('x-forgejo-signature') ?? header('x-hub-signature-256')?.replace(/^sha256=/, '');
  if (secret === null || !sent) throw new Unauthorized(refused);
  const expected = createHmac('sha256', secret).update(body).digest();
  const given = Buffer.from(sent, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Unauthorized(refused);
}

/** The full ref a push payload names (`refs/heads/main`), when it names one. */
export function pushedRef(body: Buffer): string | undefined {
  try {
    const ref = (JSON.parse(body.toString('utf8')) as { ref?: unknown }).ref;
    return typeof ref === 'string' ? ref : undefined;
  } catch {
    return undefined;
  }
}

/** How a refused push is answered: what the forge must do. */
export const signatureRefused = (whose: string) =>
  `The signature does not match: the forge must sign the payload with the ${whose} webhook secret ` +
  "(HMAC-SHA256 in X-Gitea-Signature, X-Forgejo-Signature or GitHub's X-Hub-Signature-256)";
