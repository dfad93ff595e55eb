import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobKind } from '../../src/jobs/job.ts';
import { createJobQueue, type JobQueue } from '../../src/jobs/queue.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/**
 * Job kinds whose handlers mostly wait (`ioBound`, the agent turn's): one fetch loop runs up to
 * `concurrency` of them side by side. Polling is set to a minute here, so every start within the
 * test's bounds was woken by the send (in process) or by NOTIFY (a send in a transaction).
 */
describe.each(BACKENDS)('io-bound jobs on %s', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let queue: JobQueue;
  let running = 0;
  let peak = 0;
  const started = new Map<number, number>();
  const done: number[] = [];
  const wait = defineJobKind({
    name: 'test.io-wait',
    payload: z.object({ n: z.number().int(), ms: z.number().int() }),
    retryLimit: 1,
    expireInSeconds: 60,
    concurrency: 20,
    ioBound: true,
  }).handledBy(async (p, ctx) => {
    started.set(p.n, performance.now());
    running++;
    peak = Math.max(peak, running);
    try {
      await sleep(p.ms, undefined, { signal: ctx.signal });
      done.push(p.n);
    } finally {
      running--;
    }
  });
  const keyed: string[] = [];
  const serial = defineJobKind({
    name: 'test.io-serial',
    payload: z.object({ key: z.string(), seq: z.number().int() }),
    retryLimit: 0,
    expireInSeconds: 60,
    concurrency: 10,
    ioBound: true,
    serializeBy: (p) => p.key,
  }).handledBy(async (p) => {
    keyed.push(`start ${p.key}${p.seq}`);
    await sleep(100);
    keyed.push(`end ${p.key}${p.seq}`);
  });

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    queue = createJobQueue(db, { log, jobs: [wait, serial], maintenanceIntervalSeconds: 1, pollingIntervalSeconds: 60 });
    await queue.start();
    await queue.work();
  });
  const state = async (id: string) => {
    const [row] = await db.prisma.$queryRaw<{ state: string; retry_count: number }[]>`SELECT state::text, retry_count FROM pgboss.job WHERE id = ${id}::uuid`;
    return row && { state: row.state, retryCount: row.retry_count };
  };
  afterAll(async () => {
    await queue?.stop({ timeoutMs: 2_000 });
    await db?.dispose();
  });

  it('runs up to its concurrency at once, starts the next as one ends, and settles each job', async () => {
    const t0 = performance.now();
    const ids: string[] = [];
    for (let n = 0; n < 30; n++) ids.push(await queue.send(wait, { n, ms: 400 }));
    await waitFor('30 jobs', () => done.length === 30, 20_000);
    // 20 at once, then 10 as slots free, each woken (the poll is a minute away); a loaded machine
    // makes the 30 sends themselves slow on PGlite, hence the loose bound.
    expect(peak).toBe(20);
    expect(performance.now() - t0).toBeLessThan(20_000);
    await waitFor('every job completed', async () => (await Promise.all(ids.map(state))).every((s) => s?.state === 'completed'));
  });

  it('starts a job sent inside a transaction when it commits, woken by NOTIFY rather than the poll', async () => {
    const sentAt = performance.now();
    await db.prisma.$transaction(async (tx) => {
      await queue.send(wait, { n: 100, ms: 1 }, { tx });
    });
    await waitFor('the job sent in a transaction', () => started.has(100), 10_000, 5);
    expect(started.get(100)! - sentAt).toBeLessThan(1_000);
  });

  it('runs jobs of one key one at a time in send order, different keys side by side', async () => {
    for (let seq = 0; seq < 3; seq++) for (const key of ['a', 'b']) await queue.send(serial, { key, seq });
    await waitFor('six keyed jobs', () => keyed.filter((e) => e.startsWith('end')).length === 6, 20_000);
    for (const key of ['a', 'b']) {
      const mine = keyed.filter((e) => e.endsWith(key + '0') || e.endsWith(key + '1') || e.endsWith(key + '2'));
      expect(mine).toEqual([`start ${key}0`, `end ${key}0`, `start ${key}1`, `end ${key}1`, `start ${key}2`, `end ${key}2`]);
    }
    expect(keyed.indexOf('start b0')).toBeLessThan(keyed.indexOf('end a0'));
  });

  it('lets running jobs finish within the stop timeout, then aborts the rest, which are retried', async () => {
    const own = createJobQueue(db, { log, jobs: [wait], maintenanceIntervalSeconds: 1, pollingIntervalSeconds: 60 });
    await own.start();
    await own.work();
    // Only `own` works the kind from here: the shared worker stops first.
    await queue.stop({ timeoutMs: 2_000 });
    const quick = await own.send(wait, { n: 200, ms: 300 });
    const stuck = await own.send(wait, { n: 201, ms: 60_000 });
    await waitFor('both handlers', () => started.has(200) && started.has(201));
    const t0 = Date.now();
    await own.stop({ timeoutMs: 1_500 });
    expect(Date.now() - t0).toBeLessThan(6_000);
    expect(done).toContain(200);
    expect(done).not.toContain(201);
    expect(await state(quick)).toEqual({ state: 'completed', retryCount: 0 });
    expect(await state(stuck)).toEqual({ state: 'retry', retryCount: 0 });
  });
});
