import type { Principal } from '../../auth/principal.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import { BadRequest, NotFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { auditComputerChange } from './audit.ts';
import { creatingOwner, ownerOf, reachableComputer } from './access.ts';
import type { ComputersDeps } from './deps.ts';
import { assertNameAndHostFree, hostTaken, insertComputer, nameTaken } from './insert.ts';
import { computerSetupJob } from './job-kinds.ts';
import { BYOM } from './machines.ts';
import { managedComputers } from './create-managed.ts';
import { retireComputer } from './retire.ts';
import { assertMayAddComputer } from './quota.ts';
import { reachDirectly, reachThroughAgent, type Reachability } from './registration.ts';
import type { CreateComputerInput, UpdateComputerInput } from './schemas.ts';
import { byomSteps } from './steps/names.ts';
import { computerViews, viewOfComputer } from './version-view.ts';

/** Computers as records: create (register), list, read, rename, delete. */
export function computerRecords(deps: ComputersDeps) {
  const managed = managedComputers(deps);

  async function reach(principal: Principal, input: CreateComputerInput): Promise<Reachability> {
    if (input.source) throw new BadRequest('source applies to managed computers; a byom computer is an existing machine');
    if (!input.remoteUser) throw new BadRequest('remoteUser is required for a byom computer: the unix user agents run as');
    const connection = input.connection;
    if (!connection) {
      throw new BadRequest(
        'A byom computer needs connection: {host, port} to reach it over SSH with the key from ' +
          'GET /api/v0/computers/ssh-public-key, or register it from the machine with `agentplane agent`',
      );
    }
    if (connection.type === 'agent') return reachThroughAgent(deps.gateway && deps.relayUrls?.agentUrl(), connection);
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
    return viewOfComputer(deps.db, { ...computer, provisioningSteps: steps }, deps.relayUrls);
  }

  return {
    get,
    bulkCreate: managed.bulkCreate,

    async create(principal: Principal, input: CreateComputerInput) {
      const owner = await creatingOwner(deps.db, principal, input.serviceAccountId);
      const provider = input.provider ?? (input.connection ? BYOM : undefined);
      if (provider !== BYOM) return managed.create(principal, owner, input);
      await assertMayAddComputer(deps.db, deps.clock, principal.organizationId, owner);
      await assertNameAndHostFree(deps.db, principal.organizationId, owner, input.name, input.hostId);
      const reached = await reach(principal, input);
      const hostId = input.hostId ?? reached.machineHostId;
      const repos = input.repos ?? [];
      const autoInstallDeps = input.autoInstallDeps ?? false;
      const steps = byomSteps({ repos, autoInstallDeps, connectedAt: reached.connectedAt });
      const id = newId('cmp');
      return insertComputer(
        deps,
        principal,
        owner,
        {
          id,
          name: input.name,
          providerType: BYOM,
          // Active means reachable: an agent's machine is once its tunnel carried the set-up's first connection.
          status: reached.connectedAt ? 'active' : 'provisioning',
          hostId,
          remoteUser: input.remoteUser,
          repos,
          autoInstallDeps,
          connectionType: reached.connectionType,
          sshHost: reached.sshHost,
          sshPort: reached.sshPort,
          hostKeyFingerprint: reached.hostKeyFingerprint,
          agentPublicKey: reached.agentPublicKey,
          relayAgentUrl: reached.relayAgentUrl,
        },
        steps,
        {
          audit: { name: input.name, providerType: BYOM, connection: reached.connectionType, ownerId: owner.id },
          send: steps.some((s) => s.status === 'pending') ? (tx) => deps.queue.send(computerSetupJob, { computerId: id }, { tx }) : undefined,
        },
      );
    },

    async list(principal: Principal, query: { hostId?: string; includeProvisioningSteps?: string; includeUnlisted?: string; includeDeleted?: string }) {
      const owner = ownerOf(principal);
      const withSteps = query.includeProvisioningSteps === 'true';
      const computers = await deps.db.computer.findMany({
        where: {
          organizationId: principal.organizationId,
          ownerKind: owner.kind,
          ownerId: owner.id,
          ...(query.includeDeleted === 'true' ? {} : { deletedAt: null }),
          ...(query.hostId ? { hostId: query.hostId } : {}),
          ...(query.includeUnlisted === 'true' ? {} : { isListed: true }),
        },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        include: withSteps ? { provisioningSteps: { orderBy: { position: 'asc' } } } : undefined,
      });
      return computerViews(deps.db, computers, deps.relayUrls);
    },

    async getByName(principal: Principal, name: string) {
      const owner = ownerOf(principal);
      const computer = await deps.db.computer.findFirst({
        where: { organizationId: principal.organizationId, ownerId: owner.id, liveName: name },
        include: { provisioningSteps: { orderBy: { position: 'asc' } } },
      });
      if (!computer) throw new NotFound(`You have no computer named "${name}"`);
      return viewOfComputer(deps.db, computer, deps.relayUrls);
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
          await auditComputerChange(tx, {
            organizationId: principal.organizationId,
            actor: principal,
            computerId,
            before: { name: computer.name, hostId: computer.hostId, remoteUser: computer.remoteUser },
            after: { ...input },
            action: 'updated',
            at: now,
          });
        });
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        if (input.name !== undefined && input.name !== computer.name) {
          const clash = await deps.db.computer.findFirst({
            where: { organizationId: computer.organizationId, ownerId: computer.ownerId, liveName: input.name },
          });
          if (clash) throw nameTaken(input.name);
        }
        throw hostTaken(input.hostId ?? '');
      }
      return get(principal, computerId);
    },

    /**
     * Hides the computer from every read and frees its name and hostId. A byom machine is left
     * as it is (files, clones, credentials written by refresh): only the registration goes. A
     * managed computer is torn down by a job (scheduleTeardown).
     */
    async remove(principal: Principal, computerId: string) {
      const computer = await reachableComputer(deps.db, principal, computerId);
      const now = deps.clock.now();
      await deps.db.$transaction(async (tx) => {
        if (!(await retireComputer(tx, deps, principal, computer, now))) throw new NotFound(`Computer ${computerId} not found`);
      });
      if (computer.connectionType === 'agent') deps.gateway?.disconnect(computerId);
    },
  };
}
