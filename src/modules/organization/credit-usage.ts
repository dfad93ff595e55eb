import type { Db } from '../../db/client.ts';

export interface CreditStanding {
  /** The member's own limit, else the organization's global one; null when neither is set. */
  limit: number | null;
  /** Credits spent this UTC calendar month (every token_usage event's credits). */
  used: number;
}

/** Where a member stands against their credits limit this month. */
export async function creditStanding(db: Db, organizationId: string, userId: string, now: Date): Promise<CreditStanding> {
  const [org, membership] = await Promise.all([
    db.organization.findUniqueOrThrow({ where: { id: organizationId }, select: { creditLimit: true } }),
    db.membership.findFirst({ where: { organizationId, userId }, select: { creditLimit: true } }),
  ]);
  const limit = membership?.creditLimit ?? org.creditLimit;
  if (limit === null) return { limit: null, used: 0 };
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const usage = await db.analyticsEvent.aggregate({
    where: { organizationId, userId, kind: 'token_usage', occurredAt: { gte: monthStart } },
    _sum: { serviceCredits: true },
  });
  return { limit: Number(limit), used: usage._sum.serviceCredits ?? 0 };
}

/** The `detail` when the limit is used up; undefined while credits remain. */
export function creditsExhausted(standing: CreditStanding): string | undefined {
  if (standing.limit === null || standing.used < standing.limit) return undefined;
  const used = Math.round(standing.used);
  return `The credits limit of ${standing.limit} for this month is used up (${used} used); ask a manager to raise the limit`;
}
