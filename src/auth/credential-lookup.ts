import type { Role } from '../generated/prisma/enums.ts';
import type { Statement } from '../db/reads.ts';

/**
 * The reads behind every authenticated request, one statement per credential kind: the key or
 * identity, its principal and the principal's standing in the organization come back in one row.
 */

/** An API key with its owner: the service account, or the user and their membership in the key's organization. */
export interface ApiKeyRow {
  id: string;
  organizationId: string;
  secretHash: string;
  expiresAt: Date | null;
  revokedAt: Date | null;
  validUntil: Date | null;
  serviceAccountId: string | null;
  serviceAccountStatus: 'active' | 'inactive' | 'deleted' | null;
  userId: string | null;
  email: string | null;
  role: Role | null;
  membershipStatus: 'active' | 'invited' | null;
  /** `auth_epoch` in the same snapshot as the rest of the row (see src/db/fenced-cache.ts). */
  epoch: string;
}

export const API_KEY_BY_HASH: Statement = {
  name: 'agentplane_api_key_by_hash',
  text: `SELECT k.id, k.organization_id AS "organizationId", k.secret_hash AS "secretHash",
  k.expires_at AS "expiresAt", k.revoked_at AS "revokedAt", k.valid_until AS "validUntil",
  sa.id AS "serviceAccountId", sa.status::text AS "serviceAccountStatus",
  u.id AS "userId", u.email, m.role::text AS role, m.status::text AS "membershipStatus",
  (SELECT e.epoch::text FROM auth_epoch e WHERE e.id = 1) AS epoch
FROM api_keys k
LEFT JOIN service_accounts sa ON sa.id = k.service_account_id
LEFT JOIN users u ON u.id = k.user_id
LEFT JOIN memberships m ON m.user_id = k.user_id AND m.organization_id = k.organization_id
WHERE k.secret_hash = $1`,
};

/** A user known by identity-provider id, with their membership in one organization (if any). */
export interface IdentityRow {
  id: string;
  email: string;
  lastSignInAt: Date | null;
  role: Role | null;
  membershipStatus: 'active' | 'invited' | null;
}

export const USER_BY_IDP_ID: Statement = {
  name: 'agentplane_user_by_idp_id',
  text: `SELECT u.id, u.email, u.last_sign_in_at AS "lastSignInAt",
  m.role::text AS role, m.status::text AS "membershipStatus"
FROM users u
LEFT JOIN memberships m ON m.user_id = u.id AND m.organization_id = $2
WHERE u.idp_user_id = $1`,
};
