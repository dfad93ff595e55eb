import { setTimeout as delay } from 'node:timers/promises';
import { PgBoss, fromPglite, fromPrisma, type ConstructorOptions, type Job, type JobResult } from 'pg-boss';
import { z } from 'zod';
import type { Database, Db } from '../db/client.ts';
import type { Logger } from '../lib/logger.ts';
import { observeJob, splitTraceContext, withTraceContext } from '../observability/jobs.ts';
import type { JobDefinition, JobKind } from './job.ts';
import { listenForJobs, startWideWorker, type WideWorker } from './wide-worker.ts';

export interface JobQueueOptions {
  log: Logger;
  jobs: readonly JobDefinition[];
  /**
   * How often expired jobs and jobs whose worker went silent are taken back for a retry, and how
   * often failed serialized jobs release their key. Default 10 s (pg-boss's own default is 60 s,
   * which would add up to a minute to every crash recovery).
   */
  maintenanceIntervalSeconds?: number;
  /**
   * Backstop poll of an idle worker. New jobs wake workers at once (LISTEN/NOTIFY); polling finds
   * retries and deferred jobs as they come due. Default 2 s.
   */
  pollingIntervalSeconds?: number;
  /** PostgreSQL schema that holds pg-boss's tables, apart from the application's. */
  schema?: string;
}

export interface SendOptions {
  /**
   * A Prisma interactive transaction (or client): the job is inserted through it and so commits or
   * rolls back with the caller's writes. On PGlite the transaction holds the only connection, so
   * nothing else may touch the database until it ends; `send` only uses `tx`.
   */
  tx?: Db;
  startAfter?: Date;
  /** A UUID chosen by the caller: sending the same id again enqueues nothing and returns it. */
  id?: string;
}

export interface JobQueue {
  /** The pg-boss instance, for tests and operational tooling; application code goes through this interface. */
  readonly boss: PgBoss;
  /** Starts pg-boss (installing or migrating its schema) and creates or updates one queue per definition. */
  start(): Promise<void>;
  send<P, I>(kind: JobKind<P, I>, payload: I, opts?: SendOptions): Promise<string>;
  /**
   * Sends `payload` to `kind` on a cron schedule (UTC), kept in pg-boss's schedule table: an
   * upsert, so every replica may call it. `missed: 'once'` sends one run for occurrences that came
   * due while nothing was running; the default skips them.
   */
  schedule<P, I>(kind: JobKind<P, I>, cron: string, payload: I, opts?: { missed?: 'skip' | 'once' }): Promise<void>;
  /** Starts workers for every definition in this process. */
  work(): Promise<void>;
  /**
   * Stops fetching, lets running handlers finish for up to `timeoutMs`, then fails what is still
   * running (counted as an attempt, so it is retried) and aborts its signal.
   */
  stop(opts?: { timeoutMs?: number }): Promise<void>;
}

/** Where a serialized queue's failed jobs are kept, so they stop holding their key. */
export function failedQueueName(def: Pick<JobDefinition, 'name'>): string {
  return `${def.name}.failed`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';
// After the grace period a handler's signal is aborted; this is how long stop() then waits for it
// to unwind before the caller closes the database under it.
const ABORT_GRACE_MS = 5_000;

/** Whether a queue row already has these settings: a start that changes nothing writes nothing. */
function sameSettings(found: object, want: Record<string, unknown>): boolean {
  return Object.entries(want).every(([key, value]) => ((found as Record<string, unknown>)[key] ?? null) === (value ?? null));
}

// Embedded databases a queue of this process has started on (see reclaimOrphanedJobs).
const queuedDatabases = new WeakSet<Database>();

export function createJobQueue(db: Database, opts: JobQueueOptions): JobQueue {
  const { log } = opts;
  const maintenanceSeconds = opts.maintenanceIntervalSeconds ?? 10;
  const pollingSeconds = opts.pollingIntervalSeconds ?? 2;
  const defs = new Map<string, JobDefinition>();
  for (const def of opts.jobs) {
    if (defs.has(def.name)) throw new Error(`job ${JSON.stringify(def.name)} is defined twice`);
    defs.set(def.name, def);
  }

  const schema = opts.schema ?? 'pgboss';
  const common: ConstructorOptions = {
    schema,
    useListenNotify: true,
    // pg-boss fails expired and heartbeat-silent jobs only in its supervise pass, and only when the
    // queue's monitor interval has also elapsed: both bound crash recovery.
    superviseIntervalSeconds: maintenanceSeconds,
    monitorIntervalSeconds: maintenanceSeconds,
  };
  // Embedded: pg-boss shares the one in-process PGlite with Prisma (a socket in front of PGlite
  // would interleave sessions). PostgreSQL: pg-boss keeps its own pool.
  const boss =
    db.kind === 'pglite' ? new PgBoss({ ...common, db: fromPglite(db.pglite), backend: 'pglite' }) : new PgBoss({ ...common, connectionString: db.url });
  // An EventEmitter without an 'error' listener throws, which would take the process down.
  boss.on('error', (err) => log.error({ err }, 'job queue error'));
  boss.on('warning', (warning) => log.warn({ data: warning.data }, warning.message));

  let started = false;
  let stopping: Promise<void> | undefined;
  const stopRequested = new AbortController();
  let sweepTimer: NodeJS.Timeout | undefined;
  /** Workers of the kinds whose handlers mostly wait (`ioBound`), by queue name. */
  const wide = new Map<string, WideWorker>();
  let unlisten: (() => Promise<void>) | undefined;

  async function ensureQueues(): Promise<void> {
    const names = [...defs.values()].flatMap((d) => (d.serialized ? [d.name, failedQueueName(d)] : [d.name]));
    const existing = new Map((await boss.getQueues(names)).map((q) => [q.name, q]));
    for (const def of defs.values()) {
      const policy = def.serialized ? 'key_strict_fifo' : 'standard';
      const deadLetter = def.serialized ? failedQueueName(def) : null;
      if (deadLetter && !existing.has(deadLetter)) await boss.createQueue(deadLetter);
      const options = {
        retryLimit: def.retryLimit,
        retryDelay: def.retryDelaySeconds,
        expireInSeconds: def.expireInSeconds,
        heartbeatSeconds: def.heartbeatSeconds,
        notify: true,
      };
      const found = existing.get(def.name);
      if (!found) {
        await boss.createQueue(def.name, { ...options, policy, ...(deadLetter ? { deadLetter } : {}) });
      } else if (found.policy !== policy) {
        throw new Error(
          `job queue ${def.name} exists with policy ${found.policy}, but its definition needs ${policy}; ` +
            'a policy cannot change: give the job a new name, or delete the queue once it is drained',
        );
      } else if (!sameSettings(found, { ...options, deadLetter })) {
        await boss.updateQueue(def.name, { ...options, deadLetter });
      }
    }
    // createQueue/updateQueue drop pg-boss's cached queue row, and send() reloads it on a connection
    // of its own. Inside a PGlite transaction that load would wait for the transaction holding the
    // only connection: a deadlock. Any cached lookup reloads it now, outside any transaction.
    for (const name of defs.keys()) await boss.findJobs(name, { id: NIL_UUID });
  }

  async function runJob(def: JobDefinition, job: Job<unknown>): Promise<JobResult> {
    const attempt = job.retryCount + 1;
    const jobLog = log.child({ job: def.name, jobId: job.id, attempt });
    const parsed = def.payload.safeParse(job.data);
    if (!parsed.success) {
      // Retrying cannot fix a payload, so it fails for good (into the failed queue when serialized).
      const message = `invalid payload: ${z.prettifyError(parsed.error)}`;
      jobLog.error({ reason: message }, 'job failed for good');
      return { id: job.id, status: 'deadletter', output: { message } };
    }
    try {
      await def.handler(parsed.data, {
        jobId: job.id,
        attempt,
        lastAttempt: attempt > def.retryLimit,
        signal: job.signal,
        stopping: stopRequested.signal,
        log: jobLog,
        send: (...args) => api.send(...args),
      });
      jobLog.info('job completed');
      return { id: job.id, status: 'completed' };
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      const willRetry = attempt <= def.retryLimit;
      if (willRetry) jobLog.warn({ err: error }, 'job failed, will retry');
      else jobLog.error({ err: error }, 'job failed for good');
      return { id: job.id, status: 'failed', output: { name: error.name, message: error.message } };
    }
  }

  /** A run inside its span (the sender's trace continues) and counted; the trace context is not part of the payload. */
  function observedRun(def: JobDefinition, job: Job<unknown>): Promise<JobResult> {
    const { data, traceparent } = splitTraceContext(job.data);
    return observeJob(def.name, job.retryCount + 1, traceparent, () => runJob(def, { ...job, data }));
  }

  // key_strict_fifo holds a key while a job of it is active, retrying or failed, so one job that
  // failed for good would block its computer forever. Its copy is already in the failed queue
  // (deadLetter); removing the original releases the key. Failures come from handlers and from
  // pg-boss's own expiry, so this runs on a timer rather than after each handler.
  async function releaseFailedKeys(): Promise<void> {
    for (const def of defs.values()) {
      if (!def.serialized) continue;
      for (const key of await boss.getBlockedKeys(def.name)) {
        const failed = (await boss.findJobs(def.name, { key })).filter((j) => j.state === 'failed');
        if (failed.length === 0) continue;
        await boss.deleteJob(
          def.name,
          failed.map((j) => j.id),
        );
        log.info({ job: def.name, key, jobIds: failed.map((j) => j.id) }, 'released key held by failed jobs');
      }
    }
  }

  function startSweeping(): void {
    if (![...defs.values()].some((d) => d.serialized)) return;
    let sweeping = false;
    sweepTimer = setInterval(() => {
      if (sweeping || stopping) return;
      sweeping = true;
      releaseFailedKeys()
        .catch((err: unknown) => log.error({ err }, 'releasing failed job keys failed'))
        .finally(() => {
          sweeping = false;
        });
    }, maintenanceSeconds * 1000);
    sweepTimer.unref();
  }

  /** The payload as the kind parses it, once the queue runs and a worker definition registers the kind. */
  function accepted<P, I>(kind: JobKind<P, I>, payload: I): P {
    if (!started || stopping) throw new Error('job queue is not running: call start() first, and not after stop()');
    if (!defs.has(kind.name)) {
      throw new Error(`job ${kind.name} is not registered with this job queue: add it to the job catalog (src/job-catalog.ts)`);
    }
    const parsed = kind.payload.safeParse(payload);
    if (!parsed.success) throw new Error(`job ${kind.name}: invalid payload: ${z.prettifyError(parsed.error)}`);
    return parsed.data;
  }

  // An embedded data directory has one process at a time (src/db/data-dir-lock.ts), so a job still
  // `active` when this process's first queue on it starts belongs to a process that died. It is
  // failed (and so retried) now instead of after its heartbeat and the next supervise pass, 10-20 s
  // later, and without the retry delay, which is for a failed attempt to cool down, not for one
  // that was cut off.
  async function reclaimOrphanedJobs(): Promise<void> {
    const { rows } = await boss.getDb().executeSql(`SELECT name, id FROM ${schema}.job WHERE state = 'active'`);
    if (rows.length === 0) return;
    const byName = new Map<string, string[]>();
    for (const { name, id } of rows as Array<{ name: string; id: string }>) {
      if (!byName.has(name)) byName.set(name, []);
      byName.get(name)!.push(id);
    }
    for (const [name, ids] of byName) {
      await boss.fail(name, ids, { message: 'the process running this job stopped before it finished' });
      log.info({ job: name, jobIds: ids }, 'retrying jobs a stopped process left running');
    }
    const ids = (rows as Array<{ id: string }>).map((r) => r.id);
    await boss.getDb().executeSql(`UPDATE ${schema}.job SET start_after = now() WHERE id = ANY($1::uuid[]) AND state = 'retry'`, [ids]);
  }

  const api: JobQueue = {
    boss,

    async start() {
      if (started) return;
      await boss.start();
      started = true;
      await ensureQueues();
      if (db.kind === 'pglite' && !queuedDatabases.has(db)) {
        queuedDatabases.add(db);
        await reclaimOrphanedJobs();
      }
    },

    async send(def, payload, sendOpts = {}) {
      const parsed = accepted(def, payload);
      if (sendOpts.id !== undefined && !UUID.test(sendOpts.id)) {
        throw new Error(`job ${def.name}: id must be a UUID, got ${JSON.stringify(sendOpts.id)}`);
      }
      const singletonKey = def.serializeBy(parsed);
      if (def.serialized && !singletonKey) throw new Error(`job ${def.name}: serializeBy returned an empty key`);
      // defineJobKind only accepts object payloads, which is what pg-boss stores.
      const id = await boss.send(def.name, withTraceContext(parsed as object), {
        ...(sendOpts.tx ? { db: fromPrisma(sendOpts.tx) } : {}),
        ...(sendOpts.startAfter ? { startAfter: sendOpts.startAfter } : {}),
        ...(sendOpts.id ? { id: sendOpts.id } : {}),
        ...(singletonKey ? { singletonKey } : {}),
      });
      // Sent outside a transaction, it can be fetched now; one sent in a transaction is announced
      // by NOTIFY when it commits.
      if (!sendOpts.tx) wide.get(def.name)?.wake();
      if (id) return id;
      // pg-boss inserts with ON CONFLICT DO NOTHING; neither policy in use rejects a new job, so
      // only a duplicate id lands here.
      if (sendOpts.id) return sendOpts.id;
      throw new Error(`job ${def.name}: pg-boss did not enqueue the job`);
    },

    async schedule(kind, cron, payload, scheduleOpts = {}) {
      const parsed = accepted(kind, payload);
      await boss.schedule(kind.name, cron, parsed as object, { tz: 'UTC', missed: scheduleOpts.missed ?? 'skip' });
    },

    async work() {
      if (!started || stopping) throw new Error('job queue is not running: call start() first, and not after stop()');
      for (const def of defs.values()) {
        if (def.ioBound) {
          wide.set(def.name, startWideWorker({ boss, def, log, pollingSeconds, run: (job) => observedRun(def, job) }));
          continue;
        }
        await boss.work(
          def.name,
          {
            batchSize: 1,
            localConcurrency: def.concurrency,
            pollingIntervalSeconds: pollingSeconds,
            // The notify-mode poll defaults to 30 s; retries and deferred jobs send no notification.
            notifyPollingIntervalSeconds: pollingSeconds,
            // Per-job results let a bad payload fail for good ('deadletter') instead of retrying.
            perJobResults: true,
          },
          (jobs) => Promise.all(jobs.map((job) => observedRun(def, job))),
        );
      }
      if (wide.size > 0) {
        unlisten = await listenForJobs(db.listen, schema, wide, log).catch((err: unknown) => {
          log.warn({ err }, 'job notifications unavailable; polling');
          return undefined;
        });
      }
      startSweeping();
    },

    stop(stopOpts = {}) {
      if (!started) return Promise.resolve();
      stopping ??= (async () => {
        clearInterval(sweepTimer);
        stopRequested.abort(new Error('the worker is stopping'));
        await unlisten?.();
        const timeoutMs = stopOpts.timeoutMs ?? 30_000;
        // The pool stays open at first: an aborted handler still settles its job through pg-boss
        // (a no-op by then, the job was failed for the retry), and a closed pool turns that into an
        // error event on every such shutdown.
        await Promise.all([
          ...[...wide.values()].map((w) => w.stop({ timeoutMs, abortGraceMs: ABORT_GRACE_MS })),
          boss.stop({ graceful: true, timeout: timeoutMs, close: false }),
        ]);
        const deadline = Date.now() + ABORT_GRACE_MS;
        while (boss.getWipData().length > 0 && Date.now() < deadline) await delay(50);
        const stuck = boss.getWipData().length;
        if (stuck > 0) log.warn({ workers: stuck }, 'job handlers ignored their abort signal');
        await boss.stop({ close: true });
      })();
      return stopping;
    },
  };
  return api;
}
