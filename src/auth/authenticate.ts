import type { AuthEpoch } from '../db/auth-epoch.ts';
import type { Db } from '../db/client.ts';
import { createFencedCache, rowWithEpoch, type FencedCache } from '../db/fenced-cache.ts';
import type { ReadRows } from '../db/reads.ts';
import type { Clock } from '../lib/clock.ts';
import { Unauthorized } from '../lib/errors.ts';
import { hashApiKey, hashesEqual, looksLikeApiKey } from './api-keys.ts';
import { API_KEY_BY_HASH, USER_BY_IDP_ID, type ApiKeyRow, type IdentityRow } from './credential-lookup.ts';
import type { JwtVerifier } from './jwt.ts';
import type { Principal } from './principal.ts';

/** `fence`: the request's auth epoch (`requestFence`), against which cached API keys are checked. */
export type Authenticate = (authorization: string | undefined, fence: AuthEpoch) => Promise<Principal>;

/** Sign-in times are refreshed at most this often, so a busy client does not write on every call. */
const SIGN_IN_REFRESH_MS = 5 * 60_000;

/** API-key rows kept at most (src/db/fenced-cache.ts). */
const MAX_CACHED_KEYS = 10_000;

interface Deps {
  db: Db;
  clock: Clock;
  reads: ReadRows;
  /** API-key rows by secret hash. */
  apiKeys: FencedCache<ApiKeyRow>;
}

/**
 * Turns an `Authorization: Bearer ...` header into a principal. An API key's row is reused only
 * while the request's fence shows no change to any credential since the row was read
 * (src/db/fenced-cache.ts), so a revocation takes effect at once on every replica; a JWT's
 * identity is read on every request. `reads` runs those statements (the opened database's
 * prepared reads); `db` writes sign-ins.
 */
export function createAuthenticator(options: { db: Db; clock: Clock; verifyJwt?: JwtVerifier; reads: ReadRows }): Authenticate {
  const deps: Deps = {
    db: options.db,
    clock: options.clock,
    reads: options.reads,
    apiKeys: createFencedCache(
      rowWithEpoch(options.reads, API_KEY_BY_HASH, (row: ApiKeyRow) => row),
      MAX_CACHED_KEYS,
    ),
  };
  return async (authorization, fence) => {
    const credential = parseBearer(authorization);
    if (looksLikeApiKey(credential)) return fromApiKey(deps, credential, fence);
    if (credential.split('.').length === 3) {
      if (!options.verifyJwt) {
        throw new Unauthorized('JWT access tokens are not enabled on this deployment; use an API key');
      }
      return fromJwt(deps, await options.verifyJwt(credential));
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

async function fromApiKey(deps: Deps, value: string, fence: AuthEpoch): Promise<Principal> {
  const secretHash = hashApiKey(value);
  const key = await deps.apiKeys.get(secretHash, fence);
  if (!key || !hashesEqual(key.secretHash, secretHash)) throw new Unauthorized('The API key is not valid');
  const now = deps.clock.now();
  if (key.revokedAt && !(key.validUntil && key.validUntil > now)) {
    throw new Unauthorized('The API key has been revoked; create a new key');
  }
  if (key.expiresAt && key.expiresAt <= now) throw new Unauthorized('The API key has expired; create a new key');
  const base = { organizationId: key.organizationId, credential: 'api_key' as const, apiKeyId: key.id };
  if (key.serviceAccountId) {
    if (key.serviceAccountStatus !== 'active') {
      throw new Unauthorized(`The service account behind this API key is ${key.serviceAccountStatus}`);
    }
    return { ...base, kind: 'service_account', serviceAccountId: key.serviceAccountId, role: 'user' };
  }
  if (!key.userId || key.membershipStatus !== 'active') {
    throw new Unauthorized('The owner of this API key is no longer an active member of the organization');
  }
  return { ...base, kind: 'user', userId: key.userId, email: key.email!, role: key.role! };
}

async function fromJwt(deps: Deps, claims: { sub: string; email?: string; orgId: string }): Promise<Principal> {
  const now = deps.clock.now();
  let user: IdentityRow | undefined = (await deps.reads<IdentityRow>(USER_BY_IDP_ID, [claims.sub, claims.orgId]))[0];
  if (!user && claims.email) user = await linkFirstSignIn(deps.db, { ...claims, email: claims.email }, now);
  if (!user || user.membershipStatus !== 'active') {
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
    role: user.role!,
  };
}

/**
 * A first sign-in: links the identity to the invited or bootstrapped member with that email and
 * activates the membership. Undefined when there is no such unlinked member.
 */
async function linkFirstSignIn(db: Db, claims: { sub: string; email: string; orgId: string }, now: Date): Promise<IdentityRow | undefined> {
  const candidate = await db.user.findUnique({
    where: { email: claims.email.toLowerCase() },
    include: { memberships: { where: { organizationId: claims.orgId } } },
  });
  if (!candidate || candidate.idpUserId !== null || !candidate.memberships[0]) return undefined;
  const user = await db.user.update({
    where: { id: candidate.id },
    data: { idpUserId: claims.sub, lastSignInAt: now },
  });
  const membership = await db.membership.update({
    where: { id: candidate.memberships[0].id },
    data: { status: 'active' },
  });
  return {
    id: user.id,
    email: user.email,
    lastSignInAt: user.lastSignInAt,
    role: membership.role,
    membershipStatus: membership.status,
  };
}
