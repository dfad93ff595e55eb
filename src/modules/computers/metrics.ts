import type { Computer } from '../../generated/prisma/client.ts';
import type { JobContext } from '../../jobs/job.ts';
import { sampleMetrics } from '../../provisioning/machine/index.ts';
import type { ComputerJobDeps } from './job-deps.ts';
import { targetFor } from './machines.ts';

/** Samples are taken every 5 minutes and kept for 4 days (the hosted platform's window). */
export const SAMPLE_INTERVAL_MS = 5 * 60_000;
export const RETENTION_MS = 4 * 24 * 3600_000;
const PARALLEL_SAMPLES = 8;

/** Samples one computer now and stores the sample. */
export async function sampleComputer(deps: ComputerJobDeps, computer: Computer, signal?: AbortSignal) {
  const target = await targetFor(deps, computer);
  const s = await sampleMetrics(deps.ssh, target, { signal, now: () => deps.clock.now() });
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
  const computers = await deps.db.computer.findMany({ where: { deletedAt: null, status: 'active' } });
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < computers.length && !ctx.signal.aborted) {
      const computer = computers[next++]!;
      try {
        await sampleComputer(deps, computer, ctx.signal);
      } catch (err) {
        failed++;
        ctx.log.debug({ computerId: computer.id, err }, 'metrics sample failed');
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL_SAMPLES }, worker));
  ctx.log.info({ computers: computers.length, failed }, 'computer metrics sampled');
}
