import type { Db } from '../../db/client.ts';

/**
 * Spec 3.2: deleting a computer pauses the automations that run on it. Called in the
 * transaction that deletes the computer; their runs then answer "paused" until an edit names
 * another computer.
 */
export async function pauseAutomationsOn(tx: Db, computer: { id: string; name: string }, now: Date): Promise<number> {
  const { count } = await tx.ciAutomation.updateMany({
    where: { computerId: computer.id, status: 'active' },
    data: { status: 'paused', pausedReason: `its computer "${computer.name}" (${computer.id}) was deleted at ${now.toISOString()}`, updatedAt: now },
  });
  return count;
}
