import type { Db } from '../../db/client.ts';
import type { Computer } from '../../generated/prisma/client.ts';
import type { JobContext } from '../../jobs/job.ts';
import type { Clock } from '../../lib/clock.ts';
import { eachConcurrently } from '../../lib/concurrency.ts';
import { sampleMetrics } from '../../provisioning/machine/index.ts';
import type { ProviderRegistry } from '../../provisioning/providers/registry.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { BYOM, targetFor, type MachineDeps } from './machines.ts';
import { NOT_POOL } from './pool/pools.ts';

type SampleDeps = MachineDeps & { db: Db; clock: Clock; providers: ProviderRegistry };

/** Samples are taken every 5 minutes and kept for 4 days (the hosted platform's window). */
export const SAMPLE_INTERVAL_MS = 5 * 60_000;
export const RETENTION_MS = 4 * 24 * 3600_000;
const PARALLEL_SAMPLES = 8;

/**
 * Samples one computer now and stores the sample. A managed computer is read through its
 * provider where it can (local: cgroup counters), else over SSH like a byom machine; a paused
 * one has nothing to sample (undefined).
 */
export async function sampleComputer(deps: SampleDeps, computer: Computer, signal?: AbortSignal) {
  if (computer.providerType !== BYOM && computer.powerState !== 'running') return undefined;
  const provider = computer.providerType === BYOM ? undefined : deps.providers.get(computer.providerType);
  const s = provider?.sampleMetrics
    ? await provider.sampleMetrics(computer.id).then((m) => m && { ...m, timestamp: deps.clock.now() })
    : await sampleMetrics(deps.ssh, await targetFor(deps, computer), { signal, now: () => deps.clock.now() });
  if (!s) return undefined;
  const row = {
    computerId: computer.id,
    timestamp: s.timestamp,
    cpuUsedPct: s.cpuUsedPct,
    cpuCount: s.cpuCount,
    memUsed: BigInt(s.memUsed),
    memTotal: BigInt(s.memTotal),
    diskUsed: BigInt(s.diskUsed),
    diskTotal: BigInt(s.diskTotal),
  };
  await deps.db.computerMetricSample.upsert({
    where: { computerId_timestamp: { computerId: computer.id, timestamp: s.timestamp } },
    create: row,
    update: row,
  });
  return row;
}

/** The periodic pass: every active computer, a few at a time; an unreachable one is skipped. */
export async function sampleAllComputers(deps: ComputerJobDeps, ctx: JobContext): Promise<void> {
  const now = deps.clock.now();
  await deps.db.computerMetricSample.deleteMany({ where: { timestamp: { lt: new Date(now.getTime() - RETENTION_MS) } } });
  const computers = await deps.db.computer.findMany({ where: { deletedAt: null, status: 'active', ...NOT_POOL } });
  let failed = 0;
  await eachConcurrently(
    computers,
    PARALLEL_SAMPLES,
    async (computer) => {
      try {
        await sampleComputer({ ...deps, providers: deps.provisioner.providers }, computer, ctx.signal);
      } catch (err) {
        failed++;
        ctx.log.debug({ computerId: computer.id, err }, 'metrics sample failed');
      }
    },
    ctx.signal,
  );
  ctx.log.info({ computers: computers.length, failed }, 'computer metrics sampled');
}
