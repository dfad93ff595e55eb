import type { Principal } from '../../auth/principal.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Db } from '../../db/client.ts';
import type { Computer, Prisma } from '../../generated/prisma/client.ts';
import { BadRequest, Conflict, Forbidden, NotFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { recordAudit } from '../audit/record.ts';
import { ownerOf, reachableComputer, type Owner } from './access.ts';
import type { ComputersDeps } from './deps.ts';
import { computerSetupJob } from './jobs.ts';
import { assertMayAddComputer } from './quota.ts';
import { reachDirectly, reachThroughAgent, type Reachability } from './registration.ts';
import type { CreateComputerInput, UpdateComputerInput } from './schemas.ts';
import { byomSteps } from './steps.ts';
import { computerView } from './views.ts';

const SOURCE = 'public_api_v0';
const BYOM = 'byom';

const nameTaken = (name: string) =>
  new Conflict(`A computer named "${name}" already exists for this owner; choose another name`);
const hostTaken = (hostId: string) =>
  new Conflict(`Another of this owner's computers already has hostId ${hostId}`);

/** Computers as records: create (register), list, read, rename, delete. */
export function computerRecords(deps: ComputersDeps) {
  async function ownerFor(principal: Principal, serviceAccountId: string | undefined): Promise<Owner> {
    if (principal.role === 'guest') throw new Forbidden('Guests cannot create computers; ask a manager for the user role');
    if (serviceAccountId === undefined) return ownerOf(principal);
    if (principal.kind !== 'user' || !['manager', 'owner'].includes(principal.role)) {
      throw new Forbidden('Only human managers and owners can create computers for a service account');
    }
    const account = await deps.db.serviceAccount.findFirst({
      where: { id: serviceAccountId, organizationId: principal.organizationId, status: { not: 'deleted' } },
    });
    if (!account) throw new BadRequest(`Service account ${serviceAccountId} not found in this organization`);
    if (account.status !== 'active') throw new BadRequest(`Service account ${serviceAccountId} is ${account.status}; activate it first`);
    return { kind: 'service', id: account.id };
  }

  async function assertNameAndHostFree(organizationId: string, owner: Owner, name: string, hostId?: string) {
    const live = { organizationId, ownerId: owner.id };
    if (await deps.db.computer.findFirst({ where: { ...live, liveName: name }, select: { id: true } })) throw nameTaken(name);
    if (hostId && (await deps.db.computer.findFirst({ where: { ...live, liveHostId: hostId }, select: { id: true } }))) {
      throw hostTaken(hostId);
    }
  }

  async function reach(principal: Principal, input: CreateComputerInput): Promise<Reachability> {
    const provider = input.provider ?? (input.connection ? BYOM : undefined);
    if (provider !== BYOM) {
      const available = await deps.providers.available();
      const choices = [BYOM, ...available].join(', ');
      throw new BadRequest(
        provider === undefined
          ? `provider is required: one of ${choices} (byom also needs connection)`
          : `Provider "${provider}" is not available on this deployment; available: ${choices}`,
      );
    }
    if (input.source) throw new BadRequest('source applies to managed computers; a byom computer is an existing machine');
    if (!input.remoteUser) throw new BadRequest('remoteUser is required for a byom computer: the unix user agents run as');
    const connection = input.connection;
    if (!connection) {
      throw new BadRequest(
        'A byom computer needs connection: {host, port} to reach it over SSH with the key from ' +
          'GET /api/v0/computers/ssh-public-key, or register it from the machine with `agentplane agent`',
      );
    }
    if (connection.type === 'agent') return reachThroughAgent(deps, connection);
    return reachDirectly(deps, {
      organizationId: principal.organizationId,
      remoteUser: input.remoteUser,
      host: connection.host,
      port: connection.port,
      now: () => deps.clock.now(),
    });
  }

  async function get(principal: Principal, computerId: string) {
    const computer = await reachableComputer(deps.db, principal, computerId);
    const steps = await deps.db.provisioningStep.findMany({ where: { computerId }, orderBy: { position: 'asc' } });
    return computerView({ ...computer, provisioningSteps: steps });
  }

  return {
    get,

    async create(principal: Principal, input: CreateComputerInput) {
      const owner = await ownerFor(principal, input.serviceAccountId);
      await assertMayAddComputer(deps.db, deps.clock, principal.organizationId, owner);
      await assertNameAndHostFree(principal.organizationId, owner, input.name, input.hostId);
      const reached = await reach(principal, input);
      const hostId = input.hostId ?? reached.machineHostId;
      const repos = input.repos ?? [];
      const autoInstallDeps = input.autoInstallDeps ?? false;
      const steps = byomSteps({ repos, autoInstallDeps, connectedAt: reached.connectedAt });
      const now = deps.clock.now();
      const id = newId('cmp');
      const data: Prisma.ComputerUncheckedCreateInput = {
        id,
        organizationId: principal.organizationId,
        ownerKind: owner.kind,
        ownerId: owner.id,
        name: input.name,
        liveName: input.name,
        providerType: BYOM,
        status: 'active',
        hostId,
        liveHostId: hostId,
        remoteUser: input.remoteUser,
        repos,
        autoInstallDeps,
        connectionType: reached.connectionType,
        sshHost: reached.sshHost,
        sshPort: reached.sshPort,
        hostKeyFingerprint: reached.hostKeyFingerprint,
        agentPublicKey: reached.agentPublicKey,
        relayAgentUrl: reached.relayAgentUrl,
        createdBy: principal.kind === 'user' ? principal.userId : principal.serviceAccountId,
        createdAt: now,
        provisioningSteps: { create: steps.map((s, position) => ({ ...s, position })) },
      };
      try {
        const created = await deps.db.$transaction(async (tx) => {
          const computer = await tx.computer.create({ data, include: { provisioningSteps: { orderBy: { position: 'asc' } } } });
          await recordAudit(tx, {
            organizationId: principal.organizationId,
            eventType: 'computer_change',
            source: SOURCE,
            actor: principal,
            target: { computerId: id },
            after: { name: input.name, providerType: BYOM, connection: reached.connectionType, ownerId: owner.id },
            payload: { action: 'created' },
            at: now,
          });
          if (steps.some((s) => s.status === 'pending')) await deps.queue.send(computerSetupJob, { computerId: id }, { tx });
          return computer;
        });
        return computerView(created);
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        await assertNameAndHostFree(principal.organizationId, owner, input.name, hostId ?? undefined);
        throw err;
      }
    },

    async list(principal: Principal, query: { hostId?: string; includeProvisioningSteps?: string; includeUnlisted?: string }) {
      const owner = ownerOf(principal);
      const withSteps = query.includeProvisioningSteps === 'true';
      const computers = await deps.db.computer.findMany({
        where: {
          organizationId: principal.organizationId,
          ownerKind: owner.kind,
          ownerId: owner.id,
          deletedAt: null,
          ...(query.hostId ? { hostId: query.hostId } : {}),
          ...(query.includeUnlisted === 'true' ? {} : { isListed: true }),
        },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        include: withSteps ? { provisioningSteps: { orderBy: { position: 'asc' } } } : undefined,
      });
      return computers.map(computerView);
    },

    async getByName(principal: Principal, name: string) {
      const owner = ownerOf(principal);
      const computer = await deps.db.computer.findFirst({
        where: { organizationId: principal.organizationId, ownerId: owner.id, liveName: name },
        include: { provisioningSteps: { orderBy: { position: 'asc' } } },
      });
      if (!computer) throw new NotFound(`You have no computer named "${name}"`);
      return computerView(computer);
    },

    async update(principal: Principal, computerId: string, input: UpdateComputerInput) {
      const computer = await reachableComputer(deps.db, principal, computerId);
      if (input.hostId !== undefined && computer.hostId !== null && input.hostId !== computer.hostId) {
        throw new BadRequest(`hostId is immutable once set; this computer's is ${computer.hostId}`);
      }
      const changes: Prisma.ComputerUpdateInput = {};
      if (input.name !== undefined && input.name !== computer.name) Object.assign(changes, { name: input.name, liveName: input.name });
      if (input.hostId !== undefined && computer.hostId === null) Object.assign(changes, { hostId: input.hostId, liveHostId: input.hostId });
      if (input.remoteUser !== undefined && input.remoteUser !== computer.remoteUser) changes.remoteUser = input.remoteUser;
      if (Object.keys(changes).length === 0) return get(principal, computerId);
      const now = deps.clock.now();
      try {
        await deps.db.$transaction(async (tx) => {
          const { count } = await tx.computer.updateMany({ where: { id: computerId, deletedAt: null }, data: { ...changes, updatedAt: now } });
          if (count === 0) throw new NotFound(`Computer ${computerId} not found`);
          await recordAudit(tx, {
            organizationId: principal.organizationId,
            eventType: 'computer_change',
            source: SOURCE,
            actor: principal,
            target: { computerId },
            before: { name: computer.name, hostId: computer.hostId, remoteUser: computer.remoteUser },
            after: { ...input },
            payload: { action: 'updated' },
            at: now,
          });
        });
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        if (input.name !== undefined && input.name !== computer.name) {
          const clash = await deps.db.computer.findFirst({ where: { organizationId: computer.organizationId, ownerId: computer.ownerId, liveName: input.name } });
          if (clash) throw nameTaken(input.name);
        }
        throw hostTaken(input.hostId ?? '');
      }
      return get(principal, computerId);
    },

    /**
     * Hides the computer from every read and frees its name and hostId. A byom machine is left
     * as it is (files, clones, credentials written by refresh): only the registration goes.
     */
    async remove(principal: Principal, computerId: string) {
      const computer = await reachableComputer(deps.db, principal, computerId);
      const now = deps.clock.now();
      await deps.db.$transaction(async (tx) => {
        if (!(await deleteComputer(tx, principal, computer, now))) throw new NotFound(`Computer ${computerId} not found`);
      });
      if (computer.connectionType === 'agent') deps.gateway?.disconnect(computerId);
    },
  };
}

/**
 * The delete of one computer inside the caller's transaction (also a service account's delete of
 * the computers it owns): hidden from every read, its name and hostId freed, unfinished install
 * runs failed, the change audited. False when it was deleted already. Once the transaction
 * commits, the caller drops an agent's tunnel (`AgentDialer.disconnect`).
 */
export async function deleteComputer(
  tx: Db,
  actor: Principal,
  computer: Pick<Computer, 'id' | 'organizationId' | 'name' | 'providerType'>,
  now: Date,
): Promise<boolean> {
  const { count } = await tx.computer.updateMany({
    where: { id: computer.id, deletedAt: null },
    data: { deletedAt: now, liveName: null, liveHostId: null, updatedAt: now },
  });
  if (count === 0) return false;
  await tx.installRun.updateMany({
    where: { computerId: computer.id, status: { in: ['queued', 'running'] } },
    data: { status: 'failed', error: 'the computer was deleted', completedAt: now },
  });
  await recordAudit(tx, {
    organizationId: computer.organizationId,
    eventType: 'computer_change',
    source: SOURCE,
    actor,
    target: { computerId: computer.id },
    before: { name: computer.name, providerType: computer.providerType },
    payload: { action: 'deleted' },
    at: now,
  });
  return true;
}
