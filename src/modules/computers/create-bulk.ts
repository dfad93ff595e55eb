import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import { AppError } from '../../lib/errors.ts';
import { creatingOwner, type Owner } from './access.ts';
import type { ComputersDeps } from './deps.ts';
import type { BulkCreateInput, ComputerView, CreateComputerInput } from './schemas.ts';
import { claimForBulk } from './pool/claim.ts';
import { usableProvider } from './provider-choice.ts';
import { sendProvision } from './managed/job-kinds.ts';

type CreateOne = (principal: Principal, owner: Owner, input: CreateComputerInput) => Promise<ComputerView>;

/**
 * Creates `quantity` managed computers named `<namePrefix>-<n>` with the lowest free suffixes:
 * first those a warm pool hands over (claimForBulk), then the rest one after another, then
 * queues their provisioning together, so the first computers' Pulumi runs do not slow the
 * creation of the rest; they provision in parallel, bounded by the stack job's concurrency. Fail-fast without rollback: the first failure stops the request, which still
 * answers with what was created and the failure. A failure before any computer exists is the
 * failure's own status (400, 402, ...). A crash between storing and queueing is repaired by the
 * reaper, which queues provisioning that never started.
 */
export async function bulkCreate(deps: ComputersDeps, createOne: CreateOne, principal: Principal, input: BulkCreateInput) {
  const owner = await creatingOwner(deps.db, principal, input.serviceAccountId);
  const provider = await usableProvider(deps.providers, input.provider);
  const names = await freeNames(deps.db, principal.organizationId, owner, input.namePrefix, input.quantity);
  const warm = await claimForBulk(deps, principal, owner, input, provider.name, names);
  const computers: ComputerView[] = [];
  let error: { message: string } | undefined;
  for (const name of names) {
    const claimed = warm.get(name);
    if (claimed) {
      computers.push(claimed);
      continue;
    }
    try {
      computers.push(await createOne(principal, owner, { name, provider: provider.name, repos: input.repos, autoInstallDeps: input.autoInstallDeps }));
    } catch (err) {
      if (computers.length === 0 || !(err instanceof AppError)) throw err;
      error = { message: `Creating "${name}" failed: ${err.message}` };
      break;
    }
  }
  // A computer claimed from a warm pool has its infrastructure already, and its own steps queued.
  for (const c of computers) if (c.provisioningSteps?.[0]?.status === 'pending') await sendProvision(deps.queue, c.id);
  return { computers, requestedQuantity: input.quantity, ...(error ? { error } : {}) };
}

/** The `quantity` lowest suffixes n >= 1 for which `<prefix>-<n>` is not a live computer of the owner. */
async function freeNames(db: Db, organizationId: string, owner: Owner, prefix: string, quantity: number): Promise<string[]> {
  const taken = await db.computer.findMany({
    where: { organizationId, ownerId: owner.id, liveName: { startsWith: `${prefix}-` } },
    select: { liveName: true },
  });
  const used = new Set(
    taken
      .map((c) => c.liveName!.slice(prefix.length + 1))
      .filter((n) => /^[1-9]\d*$/.test(n))
      .map(Number),
  );
  const names: string[] = [];
  for (let n = 1; names.length < quantity; n++) if (!used.has(n)) names.push(`${prefix}-${n}`);
  return names;
}
