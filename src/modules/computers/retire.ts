import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import { auditComputerChange } from './audit.ts';
import { pauseAutomationsOn } from '../automations/pause.ts';
import type { ComputersDeps } from './deps.ts';
import { computerEvents } from './computer-events.ts';
import { BYOM } from './machines.ts';
import { begin, transition } from './lifecycle.ts';
import { computerStackJob } from './managed/job-kinds.ts';
import { STEP } from './steps/names.ts';
import { moveSteps, putStep } from './steps/store.ts';

export type RetireDeps = Pick<ComputersDeps, 'queue' | 'managed'>;

type Retired = Pick<Computer, 'id' | 'organizationId' | 'name' | 'providerType' | 'connectionType'>;

/**
 * Deletes a computer inside the caller's transaction, as `DELETE /computers/{id}` does and a
 * service account's delete does for the computers it owns: hidden from every read, its name and
 * hostId freed, queued installs failed, a managed computer's teardown scheduled, the change
 * audited. False when it was deleted already (compare-and-set on `deletedAt`). Once the
 * transaction commits, the caller drops an agent's tunnel (`AgentDialer.disconnect`).
 */
export async function retireComputer(tx: Db, deps: RetireDeps, actor: Principal, computer: Retired, now: Date): Promise<boolean> {
  const deleted = await transition(tx, computer.id, { from: { deletedAt: null }, to: { deletedAt: now, liveName: null, liveHostId: null, updatedAt: now } });
  if (!deleted) return false;
  await tx.installRun.updateMany({
    where: { computerId: computer.id, status: { in: ['queued', 'running'] } },
    data: { status: 'failed', error: 'the computer was deleted', completedAt: now },
  });
  if (computer.providerType !== BYOM) await scheduleTeardown(tx, deps, computer, now);
  await pauseAutomationsOn(tx, computer, now);
  await computerEvents.deleted(tx, computer);
  await auditComputerChange(tx, {
    organizationId: computer.organizationId,
    actor,
    computerId: computer.id,
    before: { name: computer.name, providerType: computer.providerType },
    action: 'deleted',
    at: now,
  });
  return true;
}

/** Deletes every live computer a service account owns (spec 3.3: they go with it); answers those it deleted, as they were. */
export async function retireServiceAccountComputers(tx: Db, deps: RetireDeps, actor: Principal, serviceAccountId: string, now: Date): Promise<Computer[]> {
  const owned = await tx.computer.findMany({
    where: { organizationId: actor.organizationId, ownerKind: 'service', ownerId: serviceAccountId, deletedAt: null },
    orderBy: { id: 'asc' },
  });
  const retired: Computer[] = [];
  for (const computer of owned) if (await retireComputer(tx, deps, actor, computer, now)) retired.push(computer);
  return retired;
}

/**
 * The managed half of DELETE, inside its transaction: the computer's key is dropped (its
 * credential revoked), its sessions archived, and the teardown queued as a stack job with a
 * visible `teardown` step. Failures are retried; the reaper re-queues a teardown past its deadline.
 */
export async function scheduleTeardown(tx: Db, deps: RetireDeps, computer: Pick<Computer, 'id'>, now: Date): Promise<void> {
  await transition(tx, computer.id, { from: { deletedAt: { not: null } }, to: { sshKeyCiphertext: null, ...begin('teardown', now, deps.managed) } });
  await tx.session.updateMany({ where: { computerId: computer.id, archivedAt: null }, data: { archivedAt: now } });
  await moveSteps(tx, computer.id, ['pending', 'running'], { status: 'skipped', error: 'the computer was deleted' });
  await putStep(tx, computer.id, { id: STEP.teardown, name: 'Tearing down' }, { status: 'pending', error: null });
  await deps.queue.send(computerStackJob, { computerId: computer.id, operation: 'teardown' }, { tx });
}
