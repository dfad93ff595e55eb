import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import type { ServiceAccountStatus } from '../../generated/prisma/enums.ts';
import { BadRequest, NotFound, PaymentRequired } from '../../lib/errors.ts';
import { entitlementsOf } from '../organization/entitlements.ts';

/** Audit vocabulary of this module. */
export const ACCOUNT_EVENT = 'service_account_change';
export const KEY_EVENT = 'api_key_lifecycle_change';

/** 402 unless the organization (its `entitlements`, as read) has a plan with service accounts. */
export function assertServiceAccountsPlan<T extends { entitlements: unknown }>(org: T | null): asserts org is T {
  if (!org || !entitlementsOf(org).serviceAccounts) {
    throw new PaymentRequired(
      "Service accounts are not included in this organization's plan; " +
        'ask the operator of this agentplane deployment to enable the serviceAccounts entitlement',
    );
  }
}

export async function requireServiceAccountsPlan(db: Db, organizationId: string): Promise<void> {
  assertServiceAccountsPlan(await db.organization.findUnique({ where: { id: organizationId }, select: { entitlements: true } }));
}

export function accountNotFound(serviceAccountId: string): NotFound {
  return new NotFound(`No service account ${serviceAccountId} in this organization; list them with GET /api/v0/service-accounts`);
}

export function keyNotFound(serviceAccountId: string, keyId: string): NotFound {
  return new NotFound(
    `Service account ${serviceAccountId} has no API key ${keyId}; ` + `list its keys with GET /api/v0/service-accounts/${serviceAccountId}/api-keys`,
  );
}

/**
 * Locks the account row until the transaction ends, so key operations on one account run one at
 * a time (two concurrent creates cannot both find a name free). Answers 404 for an account of
 * another organization, exactly as for one that does not exist.
 */
export async function lockAccount(tx: Db, organizationId: string, serviceAccountId: string): Promise<{ id: string; status: ServiceAccountStatus }> {
  const rows = await tx.$queryRaw<{ id: string; status: ServiceAccountStatus }[]>`
    SELECT id, status::text AS status FROM service_accounts
    WHERE id = ${serviceAccountId} AND organization_id = ${organizationId}
    FOR UPDATE`;
  const row = rows[0];
  if (!row) throw accountNotFound(serviceAccountId);
  return row;
}

/** `expiresAt` (Unix ms) as a Date, refusing instants that are not in the future. */
export function futureExpiry(expiresAt: number | undefined, now: Date): Date | null {
  if (expiresAt === undefined) return null;
  if (expiresAt <= now.getTime()) {
    throw new BadRequest(
      `expiresAt ${new Date(expiresAt).toISOString()} is not in the future (now is ${now.toISOString()}); ` +
        'pass a later Unix time in milliseconds, or omit it for a key that does not expire',
      { metadata: { errors: [{ field: 'expiresAt', message: 'must be in the future' }] } },
    );
  }
  return new Date(expiresAt);
}

/** The id a change is attributed to (`createdBy`): the user, or the account for a service credential. */
export function actorId(actor: Principal): string {
  return actor.kind === 'user' ? actor.userId : actor.serviceAccountId;
}
