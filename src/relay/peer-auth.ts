import { createHmac, timingSafeEqual } from 'node:crypto';

/** The header a replica sends when it asks another for a tunnelled stream. */
export const PEER_TOKEN_HEADER = 'x-agentplane-peer-token';

/** A token is good for this long: long enough for clock skew between pods, short against replay. */
const TOKEN_TTL_MS = 30_000;

/**
 * Tokens between replicas: an HMAC over the computer id and an expiry, keyed by a secret derived
 * from the encryption key every replica already shares. Bound to one computer, valid 30 s.
 */
export function peerTokens(secret: string, now: () => number = Date.now) {
  const mac = (computerId: string, expires: number) => createHmac('sha256', secret).update(`relay-peer\n${computerId}\n${expires}`).digest('base64url');
  return {
    sign(computerId: string): string {
      const expires = now() + TOKEN_TTL_MS;
      return `${expires}.${mac(computerId, expires)}`;
    },
    verify(computerId: string, token: string | undefined): boolean {
      const [expiresText, signature] = (token ?? '').split('.');
      const expires = Number(expiresText);
      if (!signature || !Number.isSafeInteger(expires) || expires < now() || expires > now() + 2 * TOKEN_TTL_MS) return false;
      const expected = Buffer.from(mac(computerId, expires));
      const given = Buffer.from(signature);
      return expected.length === given.length && timingSafeEqual(expected, given);
    },
  };
}
export type PeerTokens = ReturnType<typeof peerTokens>;
