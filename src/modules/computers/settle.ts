import type { Db } from '../../db/client.ts';
import { inTransaction } from '../../db/transaction.ts';
import { computerEvents } from './computer-events.ts';

/**
 * Ends provisioning once every step has finished: `active`, or `error` when a step failed (the
 * step holds the error). Compare-and-set on the operation, so a computer deleted or reaped
 * meanwhile is left alone. Byom computers are never provisioning, so this is a no-op for them.
 */
export async function settleProvisioning(db: Db, computerId: string, now: Date): Promise<void> {
  const steps = await db.provisioningStep.findMany({ where: { computerId }, select: { status: true } });
  if (steps.some((s) => s.status === 'pending' || s.status === 'running')) return;
  const failed = steps.some((s) => s.status === 'failed');
  await inTransaction(db, async (tx) => {
    const { count } = await tx.computer.updateMany({
      where: { id: computerId, status: 'provisioning', operation: 'provision' },
      data: failed
        ? { status: 'error', operation: null, operationDeadline: null }
        : { status: 'active', operation: null, operationDeadline: null, lastActiveAt: now },
    });
    if (count) await computerEvents.status(tx, computerId, failed ? 'error' : 'active');
  });
}
