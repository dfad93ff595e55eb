import type { Principal } from '../../auth/principal.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import { BadRequest, Conflict, ServiceUnavailable } from '../../lib/errors.ts';
import { writeGitCredentials } from '../../repos/git-credentials.ts';
import { reachableComputer } from './access.ts';
import type { ComputersDeps } from './deps.ts';
import { startInstallSession } from './install.ts';
import { begin, transition } from './lifecycle.ts';
import { BYOM, machineUnavailable, requireRunning, targetFor } from './machines.ts';
import { computerStackJob } from './managed/job-kinds.ts';
import { refuseUnpausable } from './managed/power.ts';
import { RETENTION_MS, SAMPLE_INTERVAL_MS, sampleComputer } from './metrics.ts';
import { organizationSshKey } from './org-ssh-key.ts';
import { viewOfComputer } from './version-view.ts';
import { waitForOperation } from './wait-for-operation.ts';

// How long POST restart waits for the resume before answering 503 (the resume goes on).
const RESTART_WAIT_MS = 120_000;

/** What runs on the machine: dependencies, credentials, metrics, restart. */
export function computerOperations(deps: ComputersDeps) {
  // Writing credentials edits the user's git config; two writes at once on one machine could
  // interleave, so this process runs them one after another per computer.
  const refreshing = new Map<string, Promise<unknown>>();
  const oneAtATime = <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const run = (refreshing.get(key) ?? Promise.resolve()).then(work);
    // The queue entry never rejects: the caller handles `run`'s error, the next caller only waits.
    const settled = run
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        if (refreshing.get(key) === settled) refreshing.delete(key);
      });
    refreshing.set(key, settled);
    return run;
  };

  return {
    async sshPublicKey(principal: Principal) {
      const key = await organizationSshKey(deps.db, deps.secrets, principal.organizationId);
      return { publicKey: key.publicKey };
    },

    async installDeps(principal: Principal, computerId: string) {
      const computer = await reachableComputer(deps.db, principal, computerId);
      if (computer.status !== 'active') {
        throw new BadRequest(`Computer "${computer.name}" is ${computer.status}; dependencies install on active computers`);
      }
      // Refused here rather than failing the install run at once on a machine it cannot reach.
      requireRunning(computer);
      await deps.db.$transaction((tx) => startInstallSession(tx, deps.queue, computer, deps.clock.now()));
      const steps = await deps.db.provisioningStep.findMany({ where: { computerId }, orderBy: { position: 'asc' } });
      return viewOfComputer(deps.db, { ...computer, provisioningSteps: steps }, deps.relayUrls);
    },

    /** Writes the organization's source-control credentials onto the machine; answers how many. */
    async refresh(principal: Principal, computerId: string) {
      const computer = await reachableComputer(deps.db, principal, computerId);
      const integrations = await deps.db.sourceControlIntegration.findMany({
        where: { organizationId: principal.organizationId },
        orderBy: { host: 'asc' },
      });
      const credentials = integrations.map((i) => ({ host: i.host, username: i.username, token: deps.secrets.open(i.tokenCiphertext) }));
      try {
        const target = await targetFor(deps, computer);
        return await oneAtATime(computer.id, () => writeGitCredentials(deps.ssh, target, credentials));
      } catch (err) {
        throw machineUnavailable(computer, err);
      }
    },

    /**
     * Stored samples since `start` (default: the whole retention window), oldest first. When the
     * newest is older than the sampling interval, one is taken now, so a caller always sees the
     * machine's current state; if the machine cannot be reached, the stored ones are returned.
     */
    async metrics(principal: Principal, computerId: string, start?: string) {
      const computer = await reachableComputer(deps.db, principal, computerId);
      const now = deps.clock.now();
      const from = start ? new Date(start) : new Date(now.getTime() - RETENTION_MS);
      const newest = await deps.db.computerMetricSample.findFirst({ where: { computerId }, orderBy: { timestamp: 'desc' } });
      if (!newest || now.getTime() - newest.timestamp.getTime() >= SAMPLE_INTERVAL_MS) {
        try {
          await sampleComputer(deps, computer, AbortSignal.timeout(20_000));
        } catch (err) {
          if (!newest) throw machineUnavailable(computer, err);
        }
      }
      const rows = await deps.db.computerMetricSample.findMany({
        where: { computerId, timestamp: { gte: from } },
        orderBy: { timestamp: 'asc' },
      });
      return rows.map((r) => ({
        timestamp: r.timestamp.toISOString(),
        cpuUsedPct: r.cpuUsedPct,
        cpuCount: r.cpuCount,
        memUsed: Number(r.memUsed),
        memTotal: Number(r.memTotal),
        diskUsed: Number(r.diskUsed),
        diskTotal: Number(r.diskTotal),
      }));
    },

    async restart(principal: Principal, computerId: string): Promise<Record<string, never>> {
      const computer = await reachableComputer(deps.db, principal, computerId);
      if (computer.providerType === BYOM) {
        throw new BadRequest(`Computer "${computer.name}" is a byom machine: restart resumes paused managed sandboxes; restart your own machine yourself`);
      }
      return restartManaged(deps, computer);
    },
  };
}

/**
 * Resumes a paused managed computer (one the caller may reach) and answers once it runs again; a
 * running one is a no-op. A pause in flight is overtaken: the resume queues behind it on the
 * computer's stack.
 */
async function restartManaged(deps: Pick<ComputersDeps, 'db' | 'clock' | 'queue'>, computer: Computer): Promise<Record<string, never>> {
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
    refuseUnpausable(computer);
    const started = await deps.db.$transaction(async (tx) => {
      const resumed = await transition(tx, computerId, {
        from: { deletedAt: null, operation: computer.operation },
        to: { ...begin('resume', now), lastActiveAt: now },
      });
      if (resumed) await deps.queue.send(computerStackJob, { computerId, operation: 'resume' }, { tx });
      return resumed;
    });
    if (!started) throw new Conflict(`Computer "${computer.name}" changed state meanwhile; try again`);
  }
  const settled = await waitForOperation(deps.db, computerId, 'resume', RESTART_WAIT_MS);
  if (!settled) throw new ServiceUnavailable(`Computer "${computer.name}" is still resuming; try again shortly`);
  if (settled.operationError) throw new ServiceUnavailable(`Computer "${computer.name}" could not be resumed: ${settled.operationError}`);
  return {};
}
