import type { Config } from './config.ts';
import type { Database } from './db/client.ts';
import type { EgressGuard } from './egress/guard.ts';
import { JOB_SCHEDULES, jobsFor } from './job-catalog.ts';
import { createJobQueue, type JobQueue, type JobQueueOptions } from './jobs/queue.ts';
import type { Clock } from './lib/clock.ts';
import type { Logger } from './lib/logger.ts';
import type { MachineAccess } from './modules/computers/machine-access.ts';
import { startWebhookDispatcher } from './modules/webhooks/dispatcher.ts';
import type { Provisioner } from './provisioning/provisioner.ts';

export interface BackgroundOptions {
  db: Database;
  config: Pick<Config, 'dataDir' | 'managed' | 'events' | 'webhooks' | 'wiki' | 'sessions'>;
  log: Logger;
  clock: Clock;
  machines: Pick<MachineAccess, 'ssh' | 'secrets' | 'gateway'>;
  /** The process's own, shared with the API. */
  provisioner: Provisioner;
  egress: EgressGuard;
  /** Run job handlers and deliver webhooks in this process; without it, jobs are only sent. */
  work: boolean;
  /** Register the cron schedules and send their start-up runs (default true; tests that drive jobs themselves leave them out). */
  schedules?: boolean;
  /** Queue timings (tests shorten them). */
  queue?: Pick<JobQueueOptions, 'maintenanceIntervalSeconds' | 'pollingIntervalSeconds'>;
}

export interface Background {
  /** The queue: the process sends through it too, so one process runs one pg-boss. */
  queue: JobQueue;
  /** Starts the queue, registers the schedules and, when this process works jobs, the worker and the webhook dispatcher. */
  start(): Promise<void>;
  /** Graceful: running handlers get up to `timeoutMs` to finish, then are aborted and retried elsewhere. */
  stop(timeoutMs: number): Promise<void>;
}

/**
 * The job queue with the whole catalog, its schedules, and (when this process works jobs) the
 * worker and the webhook dispatcher: built by the composition root (src/compose.ts) for `serve`,
 * `agentplane worker`, the test servers and the benches alike. Nothing runs before `start`.
 */
export function createBackground(opts: BackgroundOptions): Background {
  const { db, config, log, clock, machines } = opts;
  const jobs = jobsFor({
    prisma: db.prisma,
    clock,
    dataDir: config.dataDir,
    ssh: machines.ssh,
    secrets: machines.secrets,
    gateway: machines.gateway,
    provisioner: opts.provisioner,
    managed: config.managed,
    egress: opts.egress,
    events: config.events,
    webhooks: config.webhooks,
    wiki: config.wiki,
    reads: db.reads,
    approvalTimeoutMs: config.sessions.approvalTimeoutMs,
    turnConcurrency: config.sessions.turnConcurrency,
    turnLimits: config.sessions.turnLimits,
  });
  const queue = createJobQueue(db, { log, ...opts.queue, jobs });
  let dispatcher: { stop(): Promise<void> } | undefined;
  return {
    queue,
    start: async () => {
      await queue.start();
      if (opts.schedules ?? true) await registerSchedules(queue);
      if (!opts.work) return;
      await queue.work();
      // Webhook attempts are queued beside the worker, never by a request.
      dispatcher = await startWebhookDispatcher({
        db: db.prisma,
        listen: db.listen,
        queue,
        clock,
        log,
        endpointConcurrency: config.webhooks.endpointConcurrency,
      });
      log.info({ jobs: jobs.map((j) => j.name) }, 'worker started');
    },
    stop: async (timeoutMs) => {
      await dispatcher?.stop();
      await queue.stop({ timeoutMs });
    },
  };
}

/** Registers every cron schedule (upserts) and sends the runs due at start (catch-up work). */
export async function registerSchedules(queue: Pick<JobQueue, 'schedule' | 'send'>): Promise<void> {
  for (const s of JOB_SCHEDULES) {
    await queue.schedule(s.kind, s.cron, s.payload, { missed: s.missed });
    if (s.sendAtStart) await queue.send(s.kind, s.payload);
  }
}
