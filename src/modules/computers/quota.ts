import type { Db } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { PaymentRequired } from '../../lib/errors.ts';
import { creditsExhausted, creditStanding } from '../organization/credit-usage.ts';
import { entitlementsOf } from '../organization/entitlements.ts';
import type { Owner } from './access.ts';
import { NOT_POOL } from './pool/pools.ts';

/**
 * 402 when the organization's plan or the owner's credits limit does not allow another
 * computer; `detail` says which.
 */
export async function assertMayAddComputer(db: Db, clock: Clock, organizationId: string, owner: Owner): Promise<void> {
  const org = await db.organization.findUniqueOrThrow({ where: { id: organizationId } });
  const plan = entitlementsOf(org);
  if (!plan.computers) {
    throw new PaymentRequired("Computers are not included in this organization's plan; ask an owner to upgrade it");
  }
  if (plan.maxComputers !== undefined) {
    // A pool's computers are no one's, except one being handed to a caller right now.
    const count = await db.computer.count({ where: { organizationId, deletedAt: null, OR: [NOT_POOL, { operation: 'claim' }] } });
    if (count >= plan.maxComputers) {
      throw new PaymentRequired(`This organization's plan allows ${plan.maxComputers} computers and it has ${count}; delete one or upgrade the plan`);
    }
  }
  if (owner.kind !== 'human') return;
  const exhausted = creditsExhausted(await creditStanding(db, organizationId, owner.id, clock.now()));
  if (exhausted) throw new PaymentRequired(exhausted);
}
