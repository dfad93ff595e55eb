import { roleAtLeast, type Principal } from '../../auth/principal.ts';
import type { Db, Prisma } from '../../db/client.ts';
import type { Membership, User } from '../../generated/prisma/client.ts';
import { pageQuery, toPage, type PageQuery } from '../../http/pagination.ts';
import { Conflict, Forbidden, NotFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import { publishKeysRevoked } from '../service-accounts/key-events.ts';
import { lockOrganization } from './organization-lock.ts';
import type { InviteBody, InviteResult, OrganizationUser } from './schemas.ts';
import type { OrganizationDeps } from './service.ts';
import { wireUserId } from './user-id.ts';

export async function listUsers(deps: OrganizationDeps, actor: Principal, page: PageQuery) {
  const q = pageQuery(page);
  const rows = await deps.db.membership.findMany({
    where: { organizationId: actor.organizationId, ...q.where },
    orderBy: q.orderBy,
    take: q.take,
    include: { user: true },
  });
  const { items, pagination } = toPage(rows, page);
  return { users: items.map(toOrganizationUser), pagination };
}

/**
 * Invites a new email, updates an existing member's role, or leaves a pending invitation as it
 * is. A full organization is not an HTTP error: the answer carries `status: "error"`.
 */
export async function inviteUser(deps: OrganizationDeps, actor: Principal, body: InviteBody): Promise<InviteResult> {
  const email = body.email.toLowerCase();
  const role = body.role;
  return deps.db.$transaction(async (tx) => {
    const now = deps.clock.now();
    const org = await lockOrganization(tx, actor.organizationId);
    const existing = await findMembership(tx, org.id, email);
    // Answers that change nothing need no more than the right to invite.
    if (existing?.status === 'invited') return { email, role: existing.role, status: 'already_invited' };
    if (existing?.role === role) return { email, role, status: 'already_member' };
    if (role === 'owner') requireOwner(actor, 'grant the owner role');
    if (existing) {
      if (existing.role === 'owner') {
        requireOwner(actor, "change an owner's role");
        await requireAnotherOwner(tx, existing, 'demote');
      }
      await tx.membership.update({ where: { id: existing.id }, data: { role, updatedAt: now } });
      await recordAudit(tx, {
        ...membershipAudit(actor, existing, now),
        before: { role: existing.role, status: existing.status },
        after: { role, status: existing.status },
        payload: { intent: 'role_change', fromRole: existing.role, toRole: role },
      });
      return { email, role, status: 'role_updated' };
    }
    const seats = await tx.membership.count({ where: { organizationId: org.id } });
    if (org.seatLimit !== null && seats >= org.seatLimit) {
      return {
        email,
        role,
        status: 'error',
        error:
          `The organization has reached its seat limit of ${org.seatLimit} (active members and pending invitations); ` +
          'remove a member or revoke an invitation first, or ask the operator to raise the limit',
      };
    }
    const user = await tx.user.upsert({ where: { email }, create: { id: newId('usr'), email, createdAt: now }, update: {} });
    const membership = await tx.membership.create({
      data: { id: newId('mem'), organizationId: org.id, userId: user.id, role, status: 'invited', createdAt: now, updatedAt: now },
    });
    await recordAudit(tx, {
      ...membershipAudit(actor, { ...membership, user }, now),
      before: null,
      after: { role, status: 'invited' },
      payload: { intent: 'invite', fromRole: null, toRole: role },
    });
    return { email, role, status: 'invited' };
  });
}

/**
 * Deletes an active member's membership (revoking their personal API keys of this organization)
 * or revokes a pending invitation.
 */
export async function removeUser(deps: OrganizationDeps, actor: Principal, rawEmail: string): Promise<void> {
  const email = rawEmail.toLowerCase();
  await deps.db.$transaction(async (tx) => {
    const now = deps.clock.now();
    await lockOrganization(tx, actor.organizationId);
    const membership = await findMembership(tx, actor.organizationId, email);
    if (!membership) {
      throw new NotFound(`No member or pending invitation with email ${email} in this organization; list them with GET /api/v0/organization/users`);
    }
    const invitation = membership.status === 'invited';
    if (membership.role === 'owner') {
      requireOwner(actor, invitation ? 'revoke an owner invitation' : 'remove an owner');
      if (!invitation) await requireAnotherOwner(tx, membership, 'remove');
    }
    await tx.membership.delete({ where: { id: membership.id } });
    // Authentication re-reads the membership on every request; revoking the keys as well keeps
    // them dead should the person be invited again later.
    const keys = { organizationId: actor.organizationId, userId: membership.userId };
    const revoked = await tx.apiKey.updateManyAndReturn({ where: { ...keys, revokedAt: null }, data: { revokedAt: now } });
    await publishKeysRevoked(tx, revoked, 'member_removed');
    await tx.apiKey.updateMany({ where: { ...keys, validUntil: { gt: now } }, data: { validUntil: now } });
    await recordAudit(tx, {
      ...membershipAudit(actor, membership, now),
      before: { role: membership.role, status: membership.status },
      after: null,
      payload: {
        intent: invitation ? 'revoke_invite' : 'remove',
        fromRole: membership.role,
        toRole: null,
        revokedApiKeys: revoked.length,
      },
    });
  });
}

function findMembership(tx: Db, organizationId: string, email: string) {
  return tx.membership.findFirst({ where: { organizationId, user: { email } }, include: { user: true } });
}

/** Owners alone may hand out or take away the owner role; managers manage everyone else. */
function requireOwner(actor: Principal, action: string): void {
  if (!roleAtLeast(actor.role, 'owner')) {
    throw new Forbidden(`Only an owner may ${action}; ask an owner of the organization to do it`);
  }
}

async function requireAnotherOwner(tx: Db, owner: Membership & { user: User }, action: 'demote' | 'remove') {
  const others = await tx.membership.count({
    where: { organizationId: owner.organizationId, role: 'owner', status: 'active', id: { not: owner.id } },
  });
  if (others === 0) {
    throw new Conflict(
      `${owner.user.email} is the organization's last owner and cannot be ${action === 'demote' ? 'demoted' : 'removed'}; ` +
        'make another member an owner first (POST /api/v0/organization/users/invite with role owner)',
    );
  }
}

function membershipAudit(actor: Principal, m: Membership & { user: User }, at: Date) {
  return {
    organizationId: m.organizationId,
    eventType: 'membership_change',
    source: PUBLIC_API_SOURCE,
    actor,
    target: { membershipId: m.id, userId: m.userId, email: m.user.email },
    at,
  };
}

function toOrganizationUser(m: Membership & { user: User }): OrganizationUser {
  const u = m.user;
  return {
    id: wireUserId(u),
    email: u.email,
    ...(u.firstName ? { firstName: u.firstName } : {}),
    ...(u.lastName ? { lastName: u.lastName } : {}),
    createdAt: m.createdAt.toISOString(),
    ...(u.lastSignInAt ? { lastSignInAt: u.lastSignInAt.toISOString() } : {}),
    metadata: stringMap(u.metadata),
    userId: u.id,
    role: m.role,
    status: m.status === 'invited' ? 'invited' : 'active',
  };
}

/** The wire format allows only string values in metadata; anything else is left out. */
function stringMap(value: Prisma.JsonValue): Record<string, string> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return {};
  return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
}
