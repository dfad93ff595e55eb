import type { Principal } from '../../auth/principal.ts';
import { DEFAULT_TURN_LIMITS, turnQueue } from '../sessions/turn-admission.ts';
import type { OrganizationDeps } from './service.ts';

/** The organization's running-turn limits, its turns running and sessions waiting, per owner: what managers watch. */
export async function getTurnQueue(deps: OrganizationDeps, actor: Principal) {
  const queue = await turnQueue(deps.db, actor.organizationId);
  return {
    limits: deps.turnLimits ?? DEFAULT_TURN_LIMITS,
    ...queue,
    owners: queue.owners.map((o) => ({ ...o, ownerKind: o.ownerKind as 'human' | 'service' })),
  };
}
