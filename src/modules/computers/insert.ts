import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import { Conflict } from '../../lib/errors.ts';
import { auditComputerChange } from './audit.ts';
import { computerEvents } from './computer-events.ts';
import type { Owner } from './access.ts';
import type { ComputersDeps } from './deps.ts';
import type { NewStep } from './steps/names.ts';
import { createSteps } from './steps/store.ts';
import { viewOfComputer } from './version-view.ts';

export const nameTaken = (name: string) => new Conflict(`A computer named "${name}" already exists for this owner; choose another name`);
export const hostTaken = (hostId: string) => new Conflict(`Another of this owner's computers already has hostId ${hostId}`);

export async function assertNameAndHostFree(db: Db, organizationId: string, owner: Owner, name: string, hostId?: string) {
  const live = { organizationId, ownerId: owner.id };
  if (await db.computer.findFirst({ where: { ...live, liveName: name }, select: { id: true } })) throw nameTaken(name);
  if (hostId && (await db.computer.findFirst({ where: { ...live, liveHostId: hostId }, select: { id: true } }))) {
    throw hostTaken(hostId);
  }
}

/** What differs between computers; ownership, live name and host id, and creation are filled in. */
type ComputerFields = Omit<
  Prisma.ComputerUncheckedCreateInput,
  'organizationId' | 'ownerKind' | 'ownerId' | 'liveName' | 'liveHostId' | 'createdBy' | 'createdAt'
> & { id: string; name: string };

/**
 * A computer becoming someone's, inside that transaction: the `created` audit record and its first
 * status event. Stored anew (insertComputer) or handed over from a warm pool (pool/claim.ts).
 */
export async function recordComputerCreated(
  tx: Db,
  principal: Principal,
  computerId: string,
  status: 'active' | 'provisioning',
  audit: Prisma.InputJsonValue,
  at: Date,
): Promise<void> {
  await auditComputerChange(tx, {
    organizationId: principal.organizationId,
    actor: principal,
    computerId,
    after: audit,
    action: 'created',
    at,
  });
  await computerEvents.status(tx, computerId, status);
}

/**
 * Stores a new computer of `owner` with its steps and an audit record, and sends its first job,
 * in one transaction. A name or hostId taken meanwhile by a concurrent request is a 409.
 */
export async function insertComputer(
  deps: Pick<ComputersDeps, 'db' | 'clock' | 'relayUrls'>,
  principal: Principal,
  owner: Owner,
  fields: ComputerFields,
  steps: NewStep[],
  opts: { audit: Prisma.InputJsonValue; send?: (tx: Db) => Promise<unknown> },
) {
  const data: Prisma.ComputerUncheckedCreateInput = {
    ...fields,
    organizationId: principal.organizationId,
    ownerKind: owner.kind,
    ownerId: owner.id,
    liveName: fields.name,
    liveHostId: fields.hostId,
    createdBy: principal.kind === 'user' ? principal.userId : principal.serviceAccountId,
    createdAt: deps.clock.now(),
  };
  try {
    const created = await deps.db.$transaction(async (tx) => {
      const computer = await tx.computer.create({ data });
      await createSteps(tx, computer.id, steps);
      await recordComputerCreated(tx, principal, computer.id, computer.status === 'active' ? 'active' : 'provisioning', opts.audit, computer.createdAt);
      await opts.send?.(tx);
      return { ...computer, provisioningSteps: await tx.provisioningStep.findMany({ where: { computerId: computer.id }, orderBy: { position: 'asc' } }) };
    });
    return viewOfComputer(deps.db, created, deps.relayUrls);
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    await assertNameAndHostFree(deps.db, principal.organizationId, owner, fields.name, fields.hostId ?? undefined);
    throw err;
  }
}
