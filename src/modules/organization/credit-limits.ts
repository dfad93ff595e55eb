import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import { lockOrganization } from './organization-lock.ts';
import { UserLimitEntrySchema, type RawUserLimitEntry, type UserLimitEntry, type UserLimitsBody, type UserLimitsResult } from './schemas.ts';
import type { OrganizationDeps } from './service.ts';

const toNumber = (limit: bigint | null) => (limit === null ? null : Number(limit));
const toBigInt = (limit: number | null) => (limit === null ? null : BigInt(limit));

export async function getGlobalLimit(deps: OrganizationDeps, actor: Principal) {
  const org = await deps.db.organization.findUniqueOrThrow({ where: { id: actor.organizationId } });
  return { limit: toNumber(org.creditLimit) };
}

export async function setGlobalLimit(deps: OrganizationDeps, actor: Principal, limit: number | null) {
  return deps.db.$transaction(async (tx) => {
    const now = deps.clock.now();
    const org = await lockOrganization(tx, actor.organizationId);
    const before = toNumber(org.creditLimit);
    if (before !== limit) {
      await tx.organization.update({ where: { id: org.id }, data: { creditLimit: toBigInt(limit), updatedAt: now } });
      await recordAudit(tx, {
        organizationId: org.id,
        eventType: 'user_limit_change',
        source: PUBLIC_API_SOURCE,
        actor,
        target: { organizationId: org.id },
        before: { limit: before },
        after: { limit },
        payload: { scope: 'global', toTokens: limit },
        at: now,
      });
    }
    return { limit };
  });
}

export async function getUserLimits(deps: OrganizationDeps, actor: Principal) {
  const org = await deps.db.organization.findUniqueOrThrow({ where: { id: actor.organizationId } });
  const overrides = await deps.db.membership.findMany({
    where: { organizationId: org.id, creditLimit: { not: null } },
    include: { user: true },
    orderBy: { user: { email: 'asc' } },
  });
  return {
    globalLimit: toNumber(org.creditLimit),
    userLimits: overrides.map((m) => ({ email: m.user.email, limit: toNumber(m.creditLimit) })),
  };
}

type Refused = { email: string; message: string };

/** Checks one entry on its own; `email` is as sent, so a refusal names what the client sent. */
function checkEntry(entry: RawUserLimitEntry, times: number): UserLimitEntry | Refused {
  if (times > 1) return { email: entry.email, message: `This email appears ${times} times in the request; send each email once` };
  const parsed = UserLimitEntrySchema.safeParse(entry);
  if (parsed.success) return { email: parsed.data.email.toLowerCase(), limit: parsed.data.limit };
  const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'entry'}: ${i.message}`).join('; ');
  return { email: entry.email, message: `Invalid entry (${problems}); fix it and send it again` };
}

/**
 * Applies every valid entry and reports each refused one by the email it named: one bad entry
 * never blocks the others.
 */
export async function setUserLimits(deps: OrganizationDeps, actor: Principal, body: UserLimitsBody): Promise<UserLimitsResult> {
  const times = new Map<string, number>();
  for (const { email } of body.users) times.set(email.toLowerCase(), (times.get(email.toLowerCase()) ?? 0) + 1);
  const checked = body.users.map((entry) => checkEntry(entry, times.get(entry.email.toLowerCase())!));
  const valid = checked.filter((c): c is UserLimitEntry => !('message' in c));

  return deps.db.$transaction(async (tx) => {
    const now = deps.clock.now();
    const memberships = await tx.membership.findMany({
      where: { organizationId: actor.organizationId, user: { email: { in: valid.map((v) => v.email) } } },
      include: { user: true },
    });
    const byEmail = new Map(memberships.map((m) => [m.user.email, m]));
    const result: UserLimitsResult = { updated: [], errors: [] };
    for (const c of checked) {
      const membership = 'message' in c ? undefined : byEmail.get(c.email);
      if ('message' in c) {
        result.errors.push(c);
      } else if (!membership) {
        result.errors.push({
          email: c.email,
          message: 'No member or pending invitation with this email in the organization; invite the user first',
        });
      } else {
        await applyUserLimit(tx, actor, membership, c.limit, now);
        result.updated.push({ email: c.email, limit: c.limit });
      }
    }
    return result;
  });
}

async function applyUserLimit(
  tx: Db,
  actor: Principal,
  membership: { id: string; organizationId: string; userId: string; creditLimit: bigint | null; user: { email: string } },
  limit: number | null,
  now: Date,
) {
  const before = toNumber(membership.creditLimit);
  if (before === limit) return;
  await tx.membership.update({ where: { id: membership.id }, data: { creditLimit: toBigInt(limit), updatedAt: now } });
  await recordAudit(tx, {
    organizationId: membership.organizationId,
    eventType: 'user_limit_change',
    source: PUBLIC_API_SOURCE,
    actor,
    target: { membershipId: membership.id, userId: membership.userId, email: membership.user.email },
    before: { limit: before },
    after: { limit },
    payload: { scope: 'individual', toTokens: limit },
    at: now,
  });
}
