import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Job, JobResult, PgBoss } from 'pg-boss';
import type { Listen } from '../db/listen.ts';
import type { Logger } from '../lib/logger.ts';
import type { JobDefinition } from './job.ts';

/** How many jobs one fetch claims at most: a burst is taken in a few round trips, not one per job. */
const FETCH_BATCH = 50;

export interface WideWorker {
  /** Fetch now: a job of this kind was just sent (in this process, or announced by NOTIFY). */
  wake(): void;
  /** Jobs running in this process. */
  running(): number;
  /**
   * Stops fetching, lets running jobs finish for up to `timeoutMs`, then aborts their signals,
   * waits up to `abortGraceMs` for them to unwind, and fails what is still running (retried later).
   */
  stop(opts: { timeoutMs: number; abortGraceMs: number }): Promise<void>;
}

export interface WideWorkerOptions {
  boss: PgBoss;
  def: JobDefinition;
  log: Logger;
  pollingSeconds: number;
  /** Runs one job with its signal set, answering how it ended (the queue's runJob). */
  run(job: Job<unknown>): Promise<JobResult>;
}

/**
 * A worker for job kinds whose handlers mostly wait (an agent turn waits on its model stream and
 * its tools): one fetch loop claims up to `def.concurrency` jobs and runs each on its own, settling
 * it when it ends, instead of pg-boss's one worker (and one poll loop) per slot. A job that ends
 * frees its slot at once; a new job wakes the loop (`wake`), and polling every `pollingSeconds`
 * finds retries, deferred jobs and jobs whose notification was missed. Claims are kept alive by
 * one heartbeat for every running job; a job whose claim is gone (expired, taken back) has its
 * signal aborted.
 */
export function startWideWorker(opts: WideWorkerOptions): WideWorker {
  const { boss, def, log } = opts;
  const limit = def.concurrency;
  const running = new Map<string, { job: Job<unknown>; claim: AbortController; done: Promise<void> }>();
  let stopping = false;
  let woken = false;
  let sleeper: AbortController | undefined;

  const wake = () => {
    woken = true;
    sleeper?.abort();
  };

  const settle = async (job: Job<unknown>, result: JobResult) => {
    const attempt = { id: job.id, retryCount: job.retryCount };
    const output = (result as { output?: object }).output ?? null;
    // A bad payload fails like any other failure here; it fails again on each retry, then for good.
    if (result.status === 'completed') await boss.complete(def.name, attempt, output);
    else await boss.fail(def.name, attempt, output);
  };

  const start = (job: Job<unknown>) => {
    const claim = new AbortController();
    job.signal = claim.signal;
    const done = opts
      .run(job)
      .then((result) => settle(job, result))
      .catch((err: unknown) => log.error({ err, job: def.name, jobId: job.id }, 'settling a job failed; it is retried once its claim lapses'))
      .finally(() => {
        running.delete(job.id);
        wake();
      });
    running.set(job.id, { job, claim, done });
  };

  const loop = (async () => {
    while (!stopping) {
      woken = false;
      const free = limit - running.size;
      let fetched = 0;
      if (free > 0) {
        try {
          const jobs = await boss.fetch(def.name, { batchSize: Math.min(free, FETCH_BATCH) });
          fetched = jobs.length;
          for (const job of jobs) start(job);
        } catch (err) {
          log.error({ err, job: def.name }, 'fetching jobs failed');
        }
      }
      // A full fetch with room left: more are likely waiting, fetch again at once.
      if (stopping || woken || (fetched > 0 && fetched === Math.min(free, FETCH_BATCH) && running.size < limit)) continue;
      sleeper = new AbortController();
      await delay(opts.pollingSeconds * 1000, undefined, { signal: sleeper.signal }).catch(() => {});
      sleeper = undefined;
    }
  })();

  const heartbeatSeconds = def.heartbeatSeconds;
  const heartbeat = setInterval(
    () => {
      const held = [...running.values()].filter((r) => !r.claim.signal.aborted);
      if (held.length === 0) return;
      boss
        .touch(
          def.name,
          held.map((r) => ({ id: r.job.id, retryCount: r.job.retryCount })),
        )
        .then((res) => {
          const settled = (res as { settled?: string[] }).settled;
          if (!settled) return;
          const refreshed = new Set(settled);
          for (const r of held) {
            // Gone from under this worker (expired, or taken back after a missed heartbeat); a job
            // that settled meanwhile has left `running` and is not aborted.
            if (!refreshed.has(r.job.id) && running.get(r.job.id) === r)
              r.claim.abort(new Error(`job ${r.job.id} is no longer active under this worker's claim`));
          }
        })
        .catch((err: unknown) => log.error({ err, job: def.name }, 'job heartbeat failed'));
    },
    (heartbeatSeconds * 1000) / 2,
  );
  heartbeat.unref();

  return {
    wake,
    running: () => running.size,
    async stop({ timeoutMs, abortGraceMs }) {
      stopping = true;
      wake();
      await loop;
      const all = () => Promise.all([...running.values()].map((r) => r.done));
      const within = (ms: number) => Promise.race([all().then(() => true), delay(ms).then(() => false)]);
      if (!(await within(timeoutMs))) {
        for (const r of running.values()) r.claim.abort(new Error('the worker is stopping'));
        if (!(await within(abortGraceMs))) {
          const stuck = [...running.values()].map((r) => ({ id: r.job.id, retryCount: r.job.retryCount }));
          log.warn({ job: def.name, workers: stuck.length }, 'job handlers ignored their abort signal');
          await boss.fail(def.name, stuck, { message: 'the worker stopped' }).catch((err: unknown) => log.error({ err }, 'failing stuck jobs failed'));
        }
      }
      clearInterval(heartbeat);
    },
  };
}

/** The channel pg-boss notifies on when a job lands on a notify-enabled queue (its payload: the queue name). */
function jobChannel(schema: string): string {
  return `pgboss_${createHash('sha224').update(schema).digest('hex').slice(0, 24)}`;
}

/** Wakes the named wide workers on pg-boss's notifications; a missed stretch wakes them all. */
export function listenForJobs(listen: Listen, schema: string, workers: Map<string, WideWorker>, log: Logger): Promise<() => Promise<void>> {
  return listen(jobChannel(schema), {
    onPayload: (name) => workers.get(name)?.wake(),
    onGap: () => {
      for (const w of workers.values()) w.wake();
    },
    onError: (err) => log.warn({ err }, 'job notifications dropped; polling until they are back'),
  });
}
