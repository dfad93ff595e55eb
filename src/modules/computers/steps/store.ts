import type { Db } from '../../../db/client.ts';
import { inTransaction } from '../../../db/transaction.ts';
import { computerEvents } from '../computer-events.ts';
import type { StepChange, StepStatus, StepStore, StoredStep } from './runner.ts';

/** Thrown inside a move's transaction to roll it back when the step was not in an expected status. */
class Moved extends Error {}

/**
 * A computer's `provisioning_steps` as the runner's store: each move locks the row, compares its
 * status and writes the change with its `computer.step` event, in one transaction.
 */
export function provisioningSteps(db: Db, computerId: string): StepStore {
  return {
    async list() {
      const rows = await db.provisioningStep.findMany({ where: { computerId }, orderBy: { position: 'asc' } });
      return rows.map((r): StoredStep => ({ id: r.id, status: r.status as StepStatus, startedAt: r.startedAt }));
    },
    move: (id, from, change) => moveStep(db, computerId, id, from, change),
    skipPending: (reason) => skipPendingSteps(db, computerId, reason),
  };
}

/** Compare-and-set of one step's status (see StepStore.move); false when it was not in `from`. */
export async function moveStep(
  db: Db,
  computerId: string,
  id: string,
  from: StepStatus[],
  change: StepChange | ((tx: Db) => Promise<StepChange>),
): Promise<boolean> {
  try {
    return await inTransaction(db, async (tx) => {
      const [row] = await tx.$queryRaw<{ status: string }[]>`
        SELECT status FROM provisioning_steps WHERE computer_id = ${computerId} AND id = ${id} FOR UPDATE`;
      if (!row || !from.includes(row.status as StepStatus)) throw new Moved();
      const { fields, ...patch } = typeof change === 'function' ? await change(tx) : change;
      const step = await tx.provisioningStep.update({ where: { computerId_id: { computerId, id } }, data: { ...patch, ...fields } });
      await computerEvents.steps(tx, [step]);
      return true;
    });
  } catch (err) {
    if (err instanceof Moved) return false;
    throw err;
  }
}

/** Where a step appended to a computer's list goes: after its last one. */
export async function nextStepPosition(tx: Db, computerId: string): Promise<number> {
  const last = await tx.provisioningStep.aggregate({ where: { computerId }, _max: { position: true } });
  return (last._max.position ?? -1) + 1;
}

/** Skips every step still pending, saying why; published like any step change. */
export async function skipPendingSteps(db: Db, computerId: string, reason: string): Promise<void> {
  await inTransaction(db, async (tx) => {
    const skipped = await tx.provisioningStep.updateManyAndReturn({
      where: { computerId, status: 'pending' },
      data: { status: 'skipped', error: reason },
    });
    skipped.sort((a, b) => a.position - b.position);
    if (skipped.length) await computerEvents.steps(tx, skipped);
  });
}
