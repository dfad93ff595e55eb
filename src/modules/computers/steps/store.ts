import type { Db } from '../../../db/client.ts';
import { inTransaction } from '../../../db/transaction.ts';
import { computerEvents } from '../computer-events.ts';
import type { NewStep } from './names.ts';
import type { StepChange, StepStatus, StepStore, StoredStep } from './runner.ts';

/**
 * A computer's `provisioning_steps`: every write of the table is one of these, and each publishes
 * the `computer.step` event of what it wrote in the same transaction (but a new computer's list,
 * which its creation announces), so a stream open on the computer sees every change as it happens.
 */

/** Thrown inside a move's transaction to roll it back when the step was not in an expected status. */
class Moved extends Error {}

/**
 * A computer's steps as the runner's store: each move locks the row, compares its status and
 * writes the change with its `computer.step` event, in one transaction.
 */
export function provisioningSteps(db: Db, computerId: string): StepStore {
  return {
    async list() {
      const rows = await db.provisioningStep.findMany({ where: { computerId }, orderBy: { position: 'asc' } });
      return rows.map((r): StoredStep => ({ id: r.id, status: r.status as StepStatus, startedAt: r.startedAt }));
    },
    move: (id, from, change) => moveStep(db, computerId, id, from, change),
    skipPending: (reason) => moveSteps(db, computerId, ['pending'], { status: 'skipped', error: reason }),
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

/** Moves every step of the computer in one of `from` to `change` (e.g. skips the pending ones, saying why). */
export async function moveSteps(db: Db, computerId: string, from: StepStatus[], change: Omit<StepChange, 'fields'>): Promise<void> {
  await inTransaction(db, async (tx) => {
    const moved = await tx.provisioningStep.updateManyAndReturn({ where: { computerId, status: { in: from } }, data: change });
    moved.sort((a, b) => a.position - b.position);
    if (moved.length) await computerEvents.steps(tx, moved);
  });
}

/** A new computer's steps, in their order, inside its creating transaction; its creation announces them. */
export async function createSteps(tx: Db, computerId: string, steps: NewStep[]): Promise<void> {
  await tx.provisioningStep.createMany({ data: steps.map((s, position) => ({ ...s, computerId, position })) });
}

/** Steps added to an existing computer's list, after its last one (e.g. a claimed computer's own). */
export async function appendSteps(tx: Db, computerId: string, steps: NewStep[]): Promise<void> {
  const base = await nextStepPosition(tx, computerId);
  const added = await tx.provisioningStep.createManyAndReturn({ data: steps.map((s, i) => ({ ...s, computerId, position: base + i })) });
  added.sort((a, b) => a.position - b.position);
  if (added.length) await computerEvents.steps(tx, added);
}

/**
 * Sets step `step.id` to `change` whatever its status, or appends it so when the computer has no
 * such step (a teardown's, an install asked for after set-up). The caller holds what serializes it.
 */
export async function putStep(tx: Db, computerId: string, step: Pick<NewStep, 'id' | 'name'>, change: StepChange): Promise<void> {
  const { fields, ...patch } = change;
  const data = { ...patch, ...fields };
  const written = await tx.provisioningStep.upsert({
    where: { computerId_id: { computerId, id: step.id } },
    create: { ...data, computerId, id: step.id, name: step.name, position: await nextStepPosition(tx, computerId) },
    update: data,
  });
  await computerEvents.steps(tx, [written]);
}

/** Where a step appended to a computer's list goes: after its last one. */
async function nextStepPosition(tx: Db, computerId: string): Promise<number> {
  const last = await tx.provisioningStep.aggregate({ where: { computerId }, _max: { position: true } });
  return (last._max.position ?? -1) + 1;
}
