import type { Db } from '../../db/client.ts';

/**
 * Locks the organization row for the rest of the transaction and returns it. Membership,
 * seat-limit, last-owner and enterprise-settings changes of one organization take this lock, so
 * concurrent requests (on any replica) see each other's results instead of racing.
 */
export async function lockOrganization(tx: Db, organizationId: string) {
  await tx.$queryRaw`SELECT id FROM organizations WHERE id = ${organizationId} FOR UPDATE`;
  return tx.organization.findUniqueOrThrow({ where: { id: organizationId } });
}
