import type { Db } from '../../db/client.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import type { ComputersDeps } from './deps.ts';
import { BYOM } from './machines.ts';
import { scheduleTeardown } from './managed/records.ts';

export type RetireDeps = Pick<ComputersDeps, 'queue' | 'managed'>;

/**
 * Deletes a computer inside the caller's transaction: hidden from every read, its name and
 * hostId freed, queued installs failed, and a managed computer's teardown scheduled. Answers
 * false when it was deleted already (compare-and-set on `deletedAt`).
 */
export async function retireComputer(tx: Db, deps: RetireDeps, computer: Pick<Computer, 'id' | 'providerType'>, now: Date): Promise<boolean> {
  const { count } = await tx.computer.updateMany({
    where: { id: computer.id, deletedAt: null },
    data: { deletedAt: now, liveName: null, liveHostId: null, updatedAt: now },
  });
  if (count === 0) return false;
  await tx.installRun.updateMany({
    where: { computerId: computer.id, status: { in: ['queued', 'running'] } },
    data: { status: 'failed', error: 'the computer was deleted', completedAt: now },
  });
  if (computer.providerType !== BYOM) await scheduleTeardown(tx, deps, computer, now);
  return true;
}

/** Deletes every live computer a service account owns (spec 3.3: they are torn down with it); answers how many. */
export async function retireServiceAccountComputers(tx: Db, deps: RetireDeps, organizationId: string, serviceAccountId: string, now: Date) {
  const owned = await tx.computer.findMany({
    where: { organizationId, ownerKind: 'service', ownerId: serviceAccountId, deletedAt: null },
    select: { id: true, providerType: true },
  });
  let retired = 0;
  for (const computer of owned) if (await retireComputer(tx, deps, computer, now)) retired++;
  return retired;
}
