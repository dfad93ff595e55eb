import { createRemoteJWKSet, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';
import { Unauthorized } from '../lib/errors.ts';

export interface JwtSettings {
  secret?: string;
  jwksUrl?: string;
  issuer?: string;
  audience?: string;
}

interface AccessTokenClaims {
  sub: string;
  email?: string;
  orgId: string;
}

export type JwtVerifier = (token: string) => Promise<AccessTokenClaims>;

const ClaimsSchema = z.object({
  sub: z.string().min(1),
  email: z.email().optional(),
  org_id: z.string().min(1),
});

/**
 * Verifies access tokens: HS256 with a shared secret, or asymmetric keys from a JWKS URL with
 * issuer and audience checks. Returns undefined when neither is configured.
 */
export function createJwtVerifier(settings: JwtSettings): JwtVerifier | undefined {
  let key: Uint8Array | JWTVerifyGetKey;
  let algorithms: string[];
  if (settings.jwksUrl) {
    key = createRemoteJWKSet(new URL(settings.jwksUrl));
    algorithms = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
  } else if (settings.secret) {
    key = new TextEncoder().encode(settings.secret);
    algorithms = ['HS256'];
  } else {
    return undefined;
  }
  return async (token) => {
    let payload: unknown;
    try {
      const result = await jwtVerify(token, key as Uint8Array, {
        algorithms,
        issuer: settings.issuer,
        audience: settings.audience,
        requiredClaims: ['exp'],
      });
      payload = result.payload;
    } catch (err) {
      throw new Unauthorized(describeJwtError(err));
    }
    const claims = ClaimsSchema.safeParse(payload);
    if (!claims.success) {
      throw new Unauthorized('The access token lacks the sub, email or org_id claim agentplane needs');
    }
    return { sub: claims.data.sub, email: claims.data.email, orgId: claims.data.org_id };
  };
}

function describeJwtError(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'The access token has expired; obtain a new one';
  if (err instanceof errors.JWTClaimValidationFailed) return `The access token was rejected: ${err.message}`;
  return 'The access token is not valid';
}
