import { roleAtLeast, type Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import { BadRequest, Forbidden, NotFound } from '../../lib/errors.ts';

export interface Owner {
  kind: 'human' | 'service';
  id: string;
}

/** The principal as a computer owner: a user, or the service account behind the key. */
export function ownerOf(principal: Principal): Owner {
  return principal.kind === 'user' ? { kind: 'human', id: principal.userId } : { kind: 'service', id: principal.serviceAccountId };
}

/**
 * A live computer the principal may act on: its own, or (for human managers and owners) one a
 * service account of the organization owns. Another member's computer and another
 * organization's answer 404, so their existence does not leak; a service-account-owned computer
 * answers 403 to plain members, who already see the organization's service accounts.
 */
export async function reachableComputer(db: Db, principal: Principal, computerId: string): Promise<Computer> {
  const computer = await db.computer.findFirst({
    where: { id: computerId, organizationId: principal.organizationId, deletedAt: null },
  });
  const missing = new NotFound(`Computer ${computerId} not found`);
  if (!computer) throw missing;
  const me = ownerOf(principal);
  if (computer.ownerKind === me.kind && computer.ownerId === me.id) return computer;
  if (computer.ownerKind !== 'service') throw missing;
  if (principal.kind !== 'user' || !roleAtLeast(principal.role, 'manager')) {
    throw new Forbidden('Only managers and owners can reach computers owned by service accounts');
  }
  return computer;
}

/**
 * Who a new computer belongs to: the principal, or (for human managers and owners) the active
 * service account named by `serviceAccountId`.
 */
export async function creatingOwner(db: Db, principal: Principal, serviceAccountId: string | undefined): Promise<Owner> {
  if (!roleAtLeast(principal.role, 'user')) throw new Forbidden('Guests cannot create computers; ask a manager for the user role');
  if (serviceAccountId === undefined) return ownerOf(principal);
  if (principal.kind !== 'user' || !roleAtLeast(principal.role, 'manager')) {
    throw new Forbidden('Only human managers and owners can create computers for a service account');
  }
  const account = await db.serviceAccount.findFirst({
    where: { id: serviceAccountId, organizationId: principal.organizationId, status: { not: 'deleted' } },
  });
  if (!account) throw new BadRequest(`Service account ${serviceAccountId} not found in this organization`);
  if (account.status !== 'active') throw new BadRequest(`Service account ${serviceAccountId} is ${account.status}; activate it first`);
  return { kind: 'service', id: account.id };
}
