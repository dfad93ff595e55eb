import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobKind, type JobDefinition } from '../../src/jobs/job.ts';
import { openDatabase } from '../../src/db/client.ts';
import { createJobQueue, failedQueueName, type JobQueue } from '../../src/jobs/queue.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { seedDataDir } from '../support/pglite-template.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

// Fast maintenance and polling so retries, expiry and key release show up within a test's budget.
const TUNING = { maintenanceIntervalSeconds: 1, pollingIntervalSeconds: 0.5 };

describe.each(BACKENDS)('job queue on %s', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let queue: JobQueue;

  const received = new Map<string, { payload: unknown; attempt: number }>();
  const echo = defineJobKind({
    name: 'test.echo',
    payload: z.object({ text: z.string().min(1), count: z.number().int().default(1) }),
    retryLimit: 2,
    expireInSeconds: 30,
  }).handledBy(async (payload, ctx) => {
    received.set(ctx.jobId, { payload, attempt: ctx.attempt });
  });

  const flakyAttempts = new Map<string, number[]>();
  const flakyLast = new Map<string, boolean[]>();
  const flaky = defineJobKind({
    name: 'test.flaky',
    payload: z.object({}),
    retryLimit: 2,
    expireInSeconds: 30,
  }).handledBy(async (_payload, ctx) => {
    flakyAttempts.set(ctx.jobId, [...(flakyAttempts.get(ctx.jobId) ?? []), ctx.attempt]);
    flakyLast.set(ctx.jobId, [...(flakyLast.get(ctx.jobId) ?? []), ctx.lastAttempt]);
    throw new Error(`boom on attempt ${ctx.attempt}`);
  });

  type Span = { key: string; seq: number; start: number; end: number };
  const spans: Span[] = [];
  const serial = defineJobKind({
    name: 'test.serial',
    payload: z.object({ key: z.string(), seq: z.number().int() }),
    retryLimit: 0,
    expireInSeconds: 30,
    concurrency: 4,
    serializeBy: (p) => `computer/${p.key}`,
  }).handledBy(async (p) => {
    const start = performance.now();
    await sleep(250);
    spans.push({ key: p.key, seq: p.seq, start, end: performance.now() });
  });

  const serialRuns: { key: string; fail: boolean }[] = [];
  const serialFail = defineJobKind({
    name: 'test.serial-fail',
    payload: z.object({ key: z.string(), fail: z.boolean() }),
    retryLimit: 0,
    expireInSeconds: 30,
    concurrency: 2,
    serializeBy: (p) => p.key,
  }).handledBy(async (p) => {
    serialRuns.push(p);
    if (p.fail) throw new Error('provisioning failed');
  });

  const jobs: JobDefinition[] = [echo, flaky, serial, serialFail];

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    await db.prisma.$executeRawUnsafe('CREATE TABLE job_test_effects (id uuid PRIMARY KEY, note text NOT NULL)');
    queue = createJobQueue(db, { log, jobs, ...TUNING });
    await queue.start();
    await queue.work();
  });
  afterAll(async () => {
    await queue?.stop({ timeoutMs: 2_000 });
    await db?.dispose();
  });

  const jobRow = async (def: JobDefinition, id: string) => (await queue.boss.findJobs(def.name, { id }))[0];

  it('runs a job with its payload validated on the way in and defaults applied', async () => {
    const id = await queue.send(echo, { text: 'hello' });
    const got = await waitFor('echo job', () => received.get(id));
    expect(got).toEqual({ payload: { text: 'hello', count: 1 }, attempt: 1 });
    await waitFor('completion', async () => (await jobRow(echo, id))?.state === 'completed');
  });

  it('refuses an invalid payload at send time, naming the field', async () => {
    await expect(queue.send(echo, { text: '' })).rejects.toThrow(/invalid payload[\s\S]*text/);
    await expect(queue.send(echo, { text: 'x', count: 1.5 })).rejects.toThrow(/count/);
  });

  it('fails a received job with an invalid payload at once, without retrying or running the handler', async () => {
    // Written past send()'s validation, as an older or foreign producer could.
    const id = (await queue.boss.send(echo.name, { text: 42 }))!;
    const row = await waitFor('failed job', async () => {
      const r = await jobRow(echo, id);
      return r?.state === 'failed' ? r : undefined;
    });
    expect(row.retryCount).toBe(0);
    expect(row.output).toMatchObject({ message: expect.stringMatching(/invalid payload[\s\S]*text/) });
    expect(received.has(id)).toBe(false);
  });

  it('schedules a registered kind in UTC with its payload validated; refuses a kind no worker registers', async () => {
    await queue.schedule(echo, '*/5 * * * *', { text: 'tick' }, { missed: 'once' });
    expect(await queue.boss.getSchedules(echo.name)).toMatchObject([
      { name: echo.name, cron: '*/5 * * * *', timezone: 'UTC', data: { text: 'tick', count: 1 } },
    ]);
    // Scheduling again updates the one schedule (every replica registers its schedules at start).
    await queue.schedule(echo, '*/10 * * * *', { text: 'tock' });
    expect(await queue.boss.getSchedules(echo.name)).toMatchObject([{ cron: '*/10 * * * *', data: { text: 'tock' } }]);
    await expect(queue.schedule(echo, '* * * * *', { text: '' })).rejects.toThrow(/invalid payload[\s\S]*text/);
    const stranger = defineJobKind({ name: 'test.unregistered', payload: z.object({}), retryLimit: 0, expireInSeconds: 5 });
    await expect(queue.schedule(stranger, '* * * * *', {})).rejects.toThrow(/not registered/);
    await expect(queue.send(stranger, {})).rejects.toThrow(/not registered/);
    expect(await queue.boss.getSchedules(stranger.name)).toEqual([]);
    await queue.boss.unschedule(echo.name);
  });

  it('retries a throwing handler up to retryLimit, then fails the job', async () => {
    const id = await queue.send(flaky, {});
    const row = await waitFor('flaky job to fail', async () => {
      const r = await jobRow(flaky, id);
      return r?.state === 'failed' ? r : undefined;
    });
    expect(flakyAttempts.get(id)).toEqual([1, 2, 3]);
    expect(flakyLast.get(id)).toEqual([false, false, true]);
    expect(row.retryCount).toBe(2);
    expect(row.output).toMatchObject({ message: 'boom on attempt 3' });
  });

  it('enqueues nothing when the surrounding transaction rolls back, and runs the job when it commits', async () => {
    const rolledBack = randomUUID();
    await expect(
      db.prisma.$transaction(async (tx) => {
        await tx.$executeRaw`INSERT INTO job_test_effects (id, note) VALUES (${rolledBack}::uuid, 'rolled back')`;
        await queue.send(echo, { text: 'never' }, { tx, id: rolledBack });
        throw new Error('abort the transaction');
      }),
    ).rejects.toThrow('abort the transaction');

    const committed = randomUUID();
    await db.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`INSERT INTO job_test_effects (id, note) VALUES (${committed}::uuid, 'committed')`;
      await queue.send(echo, { text: 'committed' }, { tx, id: committed });
    });

    await waitFor('committed job', () => received.get(committed));
    expect(await jobRow(echo, rolledBack)).toBeUndefined();
    expect(received.has(rolledBack)).toBe(false);
    const notes = await db.prisma.$queryRaw<{ note: string }[]>`SELECT note FROM job_test_effects ORDER BY note`;
    expect(notes).toEqual([{ note: 'committed' }]);
  });

  it('enqueues a job once per caller-chosen id', async () => {
    const id = randomUUID();
    expect(await queue.send(echo, { text: 'once' }, { id })).toBe(id);
    expect(await queue.send(echo, { text: 'twice' }, { id })).toBe(id);
    await waitFor('deduplicated job', () => received.get(id));
    expect(received.get(id)?.payload).toEqual({ text: 'once', count: 1 });
  });

  it('holds a deferred job until its start time', async () => {
    const id = await queue.send(echo, { text: 'later' }, { startAfter: new Date(Date.now() + 1_500) });
    await sleep(800);
    expect(received.has(id)).toBe(false);
    await waitFor('deferred job', () => received.get(id));
  });

  it('runs jobs of one key one at a time in send order, and different keys concurrently', async () => {
    // A second pg-boss instance competes for the same jobs, as another replica would.
    const other = createJobQueue(db, { log, jobs, ...TUNING });
    await other.start();
    await other.work();
    try {
      for (let seq = 0; seq < 4; seq++) {
        for (const key of ['a', 'b', 'c']) await queue.send(serial, { key, seq });
      }
      await waitFor('serial jobs', () => spans.length === 12, 30_000);
    } finally {
      await other.stop({ timeoutMs: 2_000 });
    }
    for (const key of ['a', 'b', 'c']) {
      const mine = spans.filter((s) => s.key === key).sort((x, y) => x.start - y.start);
      expect(mine.map((s) => s.seq)).toEqual([0, 1, 2, 3]);
      for (let i = 1; i < mine.length; i++) expect(mine[i]!.start).toBeGreaterThanOrEqual(mine[i - 1]!.end);
    }
    const overlapping = spans.some((x) => spans.some((y) => x.key !== y.key && x.start < y.end && y.start < x.end));
    expect(overlapping).toBe(true);
  });

  it('releases a key when its job fails for good, keeping the failure in the failed queue', async () => {
    const failedId = await queue.send(serialFail, { key: 'k1', fail: true });
    await queue.send(serialFail, { key: 'k1', fail: false });
    await waitFor('the job queued behind the failure', () => serialRuns.some((r) => r.key === 'k1' && !r.fail));
    expect(serialRuns.filter((r) => r.key === 'k1')).toEqual([
      { key: 'k1', fail: true },
      { key: 'k1', fail: false },
    ]);
    expect(await jobRow(serialFail, failedId)).toBeUndefined();
    const [dead] = await queue.boss.findJobs(failedQueueName(serialFail), { data: { key: 'k1', fail: true } });
    expect(dead).toMatchObject({ sourceId: failedId, sourceOutput: { message: 'provisioning failed' } });
  });

  it('a start updates a queue whose definition changed and writes nothing when it did not', async () => {
    const kind = (retryLimit: number) =>
      defineJobKind({ name: 'test.settings', payload: z.object({}), retryLimit, expireInSeconds: 30 }).handledBy(async () => {});
    const startWith = async (retryLimit: number) => {
      const q = createJobQueue(db, { log, jobs: [kind(retryLimit)], ...TUNING });
      await q.start();
      await q.stop({ timeoutMs: 1_000 });
      const [row] = await queue.boss.getQueues(['test.settings']);
      return row!;
    };
    await startWith(1);
    const changed = await startWith(3);
    expect(changed.retryLimit).toBe(3);
    const again = await startWith(3);
    expect(again).toMatchObject({ retryLimit: 3, updatedOn: changed.updatedOn });
  });

  it('lets a running handler finish within the stop timeout, then aborts and retries the rest', async () => {
    const events: string[] = [];
    const slow = defineJobKind({
      name: 'test.slow',
      payload: z.object({ ms: z.number() }),
      retryLimit: 1,
      expireInSeconds: 60,
      concurrency: 2,
    }).handledBy(async (p, ctx) => {
      events.push(`start ${p.ms}`);
      try {
        await sleep(p.ms, undefined, { signal: ctx.signal });
        events.push(`done ${p.ms}`);
      } catch (err) {
        events.push(`aborted ${p.ms}`);
        throw err;
      }
    });
    const own = createJobQueue(db, { log, jobs: [slow], ...TUNING });
    await own.start();
    const quick = await own.send(slow, { ms: 300 });
    const stuck = await own.send(slow, { ms: 60_000 });
    await own.work();
    await waitFor('both handlers', () => events.filter((e) => e.startsWith('start')).length === 2);
    const started = Date.now();
    await own.stop({ timeoutMs: 1_500 });
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(events).toContain('done 300');
    expect(events).toContain('aborted 60000');
    expect((await queue.boss.findJobs(slow.name, { id: quick }))[0]?.state).toBe('completed');
    expect((await queue.boss.findJobs(slow.name, { id: stuck }))[0]).toMatchObject({ state: 'retry', retryCount: 0 });
  });
});

describe('job queue on an embedded data directory', () => {
  it('retries at once a job a dead process left active, without waiting for its heartbeat or retry delay', async () => {
    const dataDir = seedDataDir(mkdtempSync(path.join(os.tmpdir(), 'agentplane-orphan-')));
    const attempts: number[] = [];
    const slow = defineJobKind({
      name: 'test.orphan',
      payload: z.object({}),
      retryLimit: 2,
      retryDelaySeconds: 600,
      expireInSeconds: 600,
    }).handledBy(async (_p, ctx) => {
      attempts.push(ctx.attempt);
    });
    try {
      // A process claims the job and dies: the claim is taken without a worker, so nothing settles it.
      let db = await openDatabase({ dataDir });
      const first = createJobQueue(db, { log, jobs: [slow], ...TUNING });
      await first.start();
      const id = await first.send(slow, {});
      expect(await first.boss.fetch(slow.name)).toMatchObject([{ id }]);
      await first.stop({ timeoutMs: 1_000 });
      await db.close();

      db = await openDatabase({ dataDir });
      const second = createJobQueue(db, { log, jobs: [slow], ...TUNING });
      try {
        await second.start();
        const [row] = await second.boss.findJobs(slow.name, { id });
        expect(row).toMatchObject({ state: 'retry', output: { message: 'the process running this job stopped before it finished' } });
        expect(row!.startAfter.getTime()).toBeLessThanOrEqual(Date.now());
        await second.work();
        await waitFor('the retried job', () => attempts.length === 1, 10_000);
        expect(attempts).toEqual([2]);
      } finally {
        await second.stop({ timeoutMs: 1_000 });
        await db.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
