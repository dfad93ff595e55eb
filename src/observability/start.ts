import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import type { JobQueue } from '../jobs/queue.ts';
import type { Logger } from '../lib/logger.ts';
import { collectOnScrape, enableMetrics } from './metrics.ts';
import { listenForScrapes } from './metrics-server.ts';
import { enableTracing, flushTracing } from './tracing.ts';

export interface Observability {
  /** The scrape address once listening (AGENTPLANE_METRICS_PORT set), else undefined. */
  metricsUrl(): string | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A process's metrics endpoint and tracing, as configured: the composition root starts and stops
 * it with the rest. With neither AGENTPLANE_METRICS_PORT nor OTEL_EXPORTER_OTLP_ENDPOINT set it
 * loads nothing.
 */
export function observability(opts: {
  config: Pick<Config, 'observability' | 'host'>;
  db: Database;
  queue?: Pick<JobQueue, 'boss'>;
  log: Logger;
}): Observability {
  const { metricsPort, otlpEndpoint, serviceName } = opts.config.observability;
  let scrapes: Awaited<ReturnType<typeof listenForScrapes>> | undefined;
  return {
    metricsUrl: () => scrapes?.url,
    async start() {
      if (otlpEndpoint) await enableTracing({ endpoint: otlpEndpoint, serviceName });
      if (metricsPort === undefined) return;
      await enableMetrics();
      collectOnScrape(scrapeSources(opts.db, opts.queue));
      scrapes ??= await listenForScrapes(metricsPort, opts.config.host, opts.log);
    },
    async stop() {
      await scrapes?.close();
      scrapes = undefined;
      await flushTracing();
    },
  };
}

function scrapeSources(db: Database, queue?: Pick<JobQueue, 'boss'>) {
  // Two gauges read the computers' counts: one query per scrape serves both.
  let counted: { at: number; rows: ReturnType<typeof countComputers> } | undefined;
  const countComputers = async () => {
    const rows = await db.prisma.$queryRaw<{ provider: string; status: string; pooled: boolean; template: boolean; count: bigint }[]>`
        SELECT provider_type AS provider, status::text AS status, owner_kind = 'pool' AS pooled,
               coalesce(source->>'templateId', '') <> '' AS template, count(*) AS count
        FROM computers WHERE deleted_at IS NULL GROUP BY 1, 2, 3, 4`;
    return rows.map((r) => ({ ...r, count: Number(r.count) }));
  };
  return {
    computers() {
      if (!counted || Date.now() - counted.at > 500) counted = { at: Date.now(), rows: countComputers() };
      return counted.rows;
    },
    async queues() {
      if (!queue) return [];
      const all = await queue.boss.getQueues();
      return all.map((q) => ({ kind: q.name, queued: q.queuedCount, active: q.activeCount, deferred: q.deferredCount }));
    },
    pool: db.poolUse,
  };
}
