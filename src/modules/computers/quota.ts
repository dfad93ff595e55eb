import type { Db } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { PaymentRequired } from '../../lib/errors.ts';
import { entitlementsOf } from '../organization/entitlements.ts';
import type { Owner } from './access.ts';

/**
 * 402 when the organization's plan or the owner's credits limit does not allow another
 * computer; `detail` says which. Credits are counted like analytics' billable tokens, over the
 * current UTC calendar month.
 */
export async function assertMayAddComputer(db: Db, clock: Clock, organizationId: string, owner: Owner): Promise<void> {
  const org = await db.organization.findUniqueOrThrow({ where: { id: organizationId } });
  const plan = entitlementsOf(org);
  if (!plan.computers) {
    throw new PaymentRequired("Computers are not included in this organization's plan; ask an owner to upgrade it");
  }
  if (plan.maxComputers !== undefined) {
    const count = await db.computer.count({ where: { organizationId, deletedAt: null } });
    if (count >= plan.maxComputers) {
      throw new PaymentRequired(
        `This organization's plan allows ${plan.maxComputers} computers and it has ${count}; delete one or upgrade the plan`,
      );
    }
  }
  if (owner.kind !== 'human') return;
  const membership = await db.membership.findFirst({ where: { organizationId, userId: owner.id } });
  const limit = membership?.creditLimit ?? org.creditLimit;
  if (limit === null || limit === undefined) return;
  const now = clock.now();
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const usage = await db.analyticsEvent.aggregate({
    where: { organizationId, userId: owner.id, occurredAt: { gte: monthStart } },
    _sum: { inputTokens: true, outputTokens: true, cacheWriteTokens: true, cacheReadTokens: true },
  });
  const s = usage._sum;
  const used =
    (s.inputTokens ?? 0n) + (s.outputTokens ?? 0n) + (s.cacheWriteTokens ?? 0n) + (s.cacheReadTokens ?? 0n) / 10n;
  if (used >= limit) {
    throw new PaymentRequired(
      `The credits limit of ${limit} for this month is used up (${used} used); ask a manager to raise the limit`,
    );
  }
}
