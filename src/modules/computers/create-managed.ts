import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import { BadRequest, Conflict, ServiceUnavailable } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { generateKeyPair } from '../../provisioning/ssh/index.ts';
import type { Owner } from './access.ts';
import type { ComputersDeps } from './deps.ts';
import { assertNameAndHostFree, insertComputer } from './insert.ts';
import { assertMayAddComputer } from './quota.ts';
import type { BulkCreateInput, CreateComputerInput } from './schemas.ts';
import { claimFromPool } from './pool/claim.ts';
import { bulkCreate } from './create-bulk.ts';
import { managedSteps, STEP } from './steps/names.ts';
import { computerStackJob, sendProvision } from './managed/job-kinds.ts';
import { usableProvider } from './provider-choice.ts';
import { applySource, setupScriptOf, sourceComputerOf } from './source.ts';
import { deadline, POWER_TIMEOUT_MS } from './managed/settings.ts';
import { waitForOperation } from './wait-for-operation.ts';

// How long POST restart waits for the resume before answering 503 (the resume goes on).
const RESTART_WAIT_MS = 120_000;

/** Managed computers as records: create (provisioning follows as a job); teardown on delete and restart below. */
export function managedComputers(deps: ComputersDeps) {
  /**
   * Stores the computer in `provisioning`. `queue: false` leaves sending its provisioning job to
   * the caller (bulk creation sends them all once every computer is stored).
   */
  async function create(principal: Principal, owner: Owner, input: CreateComputerInput, opts: { queue?: boolean } = {}) {
    const sourced = await applySource(deps.db, principal, input);
    const provider = await usableProvider(deps.providers, sourced.provider);
    if (input.connection) throw new BadRequest('connection applies to byom machines; a managed computer is reached through its provider');
    await assertMayAddComputer(deps.db, deps.clock, principal.organizationId, owner);
    await assertNameAndHostFree(deps.db, principal.organizationId, owner, input.name, input.hostId);
    const claimed = await claimFromPool(deps, principal, owner, input, sourced, provider.name);
    if (claimed) return claimed;
    const id = newId('cmp');
    const key = generateKeyPair(`agentplane-${id}`);
    const { repos, autoInstallDeps } = sourced;
    const now = deps.clock.now();
    return insertComputer(
      deps,
      principal,
      owner,
      {
        id,
        name: input.name,
        providerType: provider.name,
        status: 'provisioning',
        hostId: input.hostId,
        isListed: sourced.isListed,
        source: sourced.source,
        repos,
        autoInstallDeps,
        sshPublicKey: key.publicKey,
        sshKeyCiphertext: deps.secrets.seal(key.privateKey),
        resources: { ...deps.managed.resources },
        operation: 'provision',
        operationDeadline: deadline(now, deps.managed.provisionTimeoutMs),
      },
      managedSteps({
        repos,
        autoInstallDeps,
        setupScript: setupScriptOf(sourced.source) !== undefined,
        copyWorkspace: sourceComputerOf(sourced.source) !== undefined,
      }),
      {
        audit: { name: input.name, providerType: provider.name, ownerId: owner.id },
        send: opts.queue === false ? undefined : (tx) => sendProvision(deps.queue, id, tx),
      },
    );
  }

  return {
    /** 201 `provisioning` at once (the stack job takes the computer to `active` or `error`), or a warm pool's computer. */
    create,

    bulkCreate: (principal: Principal, input: BulkCreateInput) =>
      bulkCreate(deps, (p, owner, one) => create(p, owner, one, { queue: false }), principal, input),
  };
}

/**
 * Resumes a paused managed computer (one the caller may reach) and answers once it runs again; a
 * running one is a no-op. A pause in flight is overtaken: the resume queues behind it on the
 * computer's stack.
 */
export async function restartManaged(deps: Pick<ComputersDeps, 'db' | 'clock' | 'queue'>, computer: Computer): Promise<Record<string, never>> {
  const computerId = computer.id;
  if (computer.status !== 'active') {
    throw new Conflict(`Computer "${computer.name}" is ${computer.status}; restart resumes an active computer that was paused`);
  }
  const now = deps.clock.now();
  if (computer.powerState === 'running' && computer.operation === null) {
    await deps.db.computer.updateMany({ where: { id: computerId, operation: null }, data: { lastActiveAt: now } });
    return {};
  }
  if (computer.operation !== 'resume') {
    const started = await deps.db.$transaction(async (tx) => {
      const { count } = await tx.computer.updateMany({
        where: { id: computerId, deletedAt: null, operation: computer.operation },
        data: { operation: 'resume', operationDeadline: deadline(now, POWER_TIMEOUT_MS), operationError: null, lastActiveAt: now },
      });
      if (count === 1) await deps.queue.send(computerStackJob, { computerId, operation: 'resume' }, { tx });
      return count === 1;
    });
    if (!started) throw new Conflict(`Computer "${computer.name}" changed state meanwhile; try again`);
  }
  const settled = await waitForOperation(deps.db, computerId, 'resume', RESTART_WAIT_MS);
  if (!settled) throw new ServiceUnavailable(`Computer "${computer.name}" is still resuming; try again shortly`);
  if (settled.operationError) throw new ServiceUnavailable(`Computer "${computer.name}" could not be resumed: ${settled.operationError}`);
  return {};
}

/**
 * The managed half of DELETE, inside its transaction: the computer's key is dropped (its
 * credential revoked), its sessions archived, and the teardown queued as a stack job with a
 * visible `teardown` step. Failures are retried; the reaper re-queues a teardown past its deadline.
 */
export async function scheduleTeardown(
  tx: Db,
  deps: Pick<ComputersDeps, 'queue' | 'managed'>,
  computer: Pick<Computer, 'id'>,
  now: Date,
): Promise<void> {
  await tx.computer.update({
    where: { id: computer.id },
    data: {
      sshKeyCiphertext: null,
      operation: 'teardown',
      operationDeadline: deadline(now, deps.managed.provisionTimeoutMs),
      operationError: null,
    },
  });
  await tx.session.updateMany({ where: { computerId: computer.id, archivedAt: null }, data: { archivedAt: now } });
  await tx.provisioningStep.updateMany({
    where: { computerId: computer.id, status: { in: ['pending', 'running'] } },
    data: { status: 'skipped', error: 'the computer was deleted' },
  });
  const last = await tx.provisioningStep.aggregate({ where: { computerId: computer.id }, _max: { position: true } });
  await tx.provisioningStep.upsert({
    where: { computerId_id: { computerId: computer.id, id: STEP.teardown } },
    create: { computerId: computer.id, id: STEP.teardown, name: 'Tearing down', status: 'pending', position: (last._max.position ?? -1) + 1 },
    update: { status: 'pending', error: null },
  });
  await deps.queue.send(computerStackJob, { computerId: computer.id, operation: 'teardown' }, { tx });
}
