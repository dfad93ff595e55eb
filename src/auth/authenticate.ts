import type { Db } from '../db/client.ts';
import type { Clock } from '../lib/clock.ts';
import { Unauthorized } from '../lib/errors.ts';
import { hashApiKey, hashesEqual, looksLikeApiKey } from './api-keys.ts';
import type { JwtVerifier } from './jwt.ts';
import type { Principal } from './principal.ts';

export type Authenticate = (authorization: string | undefined) => Promise<Principal>;

/** Sign-in times are refreshed at most this often, so a busy client does not write on every call. */
const SIGN_IN_REFRESH_MS = 5 * 60_000;

/**
 * Turns an `Authorization: Bearer ...` header into a principal. Every request re-reads the key
 * from the database, so a revocation takes effect at once on every replica.
 */
export function createAuthenticator(deps: { db: Db; clock: Clock; verifyJwt?: JwtVerifier }): Authenticate {
  return async (authorization) => {
    const credential = parseBearer(authorization);
    if (looksLikeApiKey(credential)) return fromApiKey(deps, credential);
    if (credential.split('.').length === 3) {
      if (!deps.verifyJwt) {
        throw new Unauthorized('JWT access tokens are not enabled on this deployment; use an API key');
      }
      return fromJwt(deps, await deps.verifyJwt(credential));
    }
    throw new Unauthorized('The credential is neither an agentplane API key nor a JWT access token');
  };
}

function parseBearer(header: string | undefined): string {
  if (!header) throw new Unauthorized('Missing credentials: send the header "Authorization: Bearer <API key>"');
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
  if (!match) throw new Unauthorized('Malformed Authorization header: expected "Bearer <credential>"');
  return match[1]!;
}

async function fromApiKey(deps: { db: Db; clock: Clock }, value: string): Promise<Principal> {
  const secretHash = hashApiKey(value);
  const key = await deps.db.apiKey.findUnique({
    where: { secretHash },
    include: { serviceAccount: true, user: { include: { memberships: true } } },
  });
  if (!key || !hashesEqual(key.secretHash, secretHash)) throw new Unauthorized('The API key is not valid');
  const now = deps.clock.now();
  if (key.revokedAt && !(key.validUntil && key.validUntil > now)) {
    throw new Unauthorized('The API key has been revoked; create a new key');
  }
  if (key.expiresAt && key.expiresAt <= now) throw new Unauthorized('The API key has expired; create a new key');
  const base = { organizationId: key.organizationId, credential: 'api_key' as const, apiKeyId: key.id };
  if (key.serviceAccount) {
    if (key.serviceAccount.status !== 'active') {
      throw new Unauthorized(`The service account behind this API key is ${key.serviceAccount.status}`);
    }
    return { ...base, kind: 'service_account', serviceAccountId: key.serviceAccount.id, role: 'user' };
  }
  const membership = key.user?.memberships.find((m) => m.organizationId === key.organizationId);
  if (!key.user || membership?.status !== 'active') {
    throw new Unauthorized('The owner of this API key is no longer an active member of the organization');
  }
  return { ...base, kind: 'user', userId: key.user.id, email: key.user.email, role: membership.role };
}

async function fromJwt(
  deps: { db: Db; clock: Clock },
  claims: { sub: string; email?: string; orgId: string },
): Promise<Principal> {
  const now = deps.clock.now();
  const known = await deps.db.user.findUnique({
    where: { idpUserId: claims.sub },
    include: { memberships: { where: { organizationId: claims.orgId } } },
  });
  let user = known;
  let membership = known?.memberships[0];
  if (!known && claims.email) {
    // A first sign-in: link the identity to the invited or bootstrapped member with that email.
    const candidate = await deps.db.user.findUnique({
      where: { email: claims.email.toLowerCase() },
      include: { memberships: { where: { organizationId: claims.orgId } } },
    });
    if (candidate && candidate.idpUserId === null && candidate.memberships[0]) {
      user = await deps.db.user.update({
        where: { id: candidate.id },
        data: { idpUserId: claims.sub, lastSignInAt: now },
        include: { memberships: { where: { organizationId: claims.orgId } } },
      });
      membership = await deps.db.membership.update({
        where: { id: candidate.memberships[0].id },
        data: { status: 'active' },
      });
    }
  }
  if (!user || membership?.status !== 'active') {
    throw new Unauthorized('This identity is not an active member of the organization named in the token');
  }
  if (!user.lastSignInAt || now.getTime() - user.lastSignInAt.getTime() > SIGN_IN_REFRESH_MS) {
    await deps.db.user.update({ where: { id: user.id }, data: { lastSignInAt: now } });
  }
  return {
    organizationId: claims.orgId,
    credential: 'jwt',
    kind: 'user',
    userId: user.id,
    email: user.email,
    role: membership.role,
  };
}
