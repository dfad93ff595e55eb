import type { Db } from '../../db/client.ts';
import { end, transition } from './lifecycle.ts';

/**
 * Ends provisioning once every step has finished: `active`, or `error` when a step failed (the
 * step holds the error). Compare-and-set on the operation, so a computer deleted or reaped
 * meanwhile is left alone. Byom computers have no provisioning operation, so this is a no-op for them.
 */
export async function settleProvisioning(db: Db, computerId: string, now: Date): Promise<void> {
  const steps = await db.provisioningStep.findMany({ where: { computerId }, select: { status: true } });
  if (steps.some((s) => s.status === 'pending' || s.status === 'running')) return;
  const status = steps.some((s) => s.status === 'failed') ? 'error' : 'active';
  await transition(db, computerId, {
    from: { status: 'provisioning', operation: 'provision' },
    to: { status, ...end(), ...(status === 'active' ? { lastActiveAt: now } : {}) },
    event: { status },
  });
}

/**
 * A byom computer registered through its agent turns `active` when the control plane first reached
 * it through the agent's tunnel (the set-up's connect step), not when it was registered.
 */
export async function markReachable(db: Db, computerId: string, now: Date): Promise<void> {
  await transition(db, computerId, {
    from: { status: 'provisioning', operation: null, deletedAt: null },
    to: { status: 'active', lastActiveAt: now },
    event: { status: 'active' },
  });
}
