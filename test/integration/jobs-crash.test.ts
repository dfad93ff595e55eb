import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseTarget } from '../../src/db/client.ts';
import { createJobQueue } from '../../src/jobs/queue.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { CRASH_TABLES, CRASH_TUNING, crashJob } from '../fixtures/job-worker.ts';
import { createTestDatabase } from '../support/databases.ts';
import { BACKENDS, type Backend } from '../support/test-db.ts';
import { seedDataDir } from '../support/pglite-template.ts';

const FIXTURE = path.resolve('test/fixtures/job-worker.ts');
const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

type Report = { event: string; jobId?: string; attempt?: number; pid?: number };

function spawnWorker(args: DatabaseTarget & { exitWhenCompleted?: string }) {
  const child: ChildProcess = spawn(process.execPath, [FIXTURE, JSON.stringify(args)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const reports: Report[] = [];
  const listeners = new Set<() => void>();
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    reports.push(JSON.parse(line) as Report);
    for (const l of listeners) l();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    reports,
    exited,
    /** Resolves with the first report matching `match`; fails early if the process dies first. */
    waitFor(match: (r: Report) => boolean, timeoutMs: number): Promise<Report> {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = reports.find(match);
          if (!hit) return;
          done();
          resolve(hit);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`worker did not report in ${timeoutMs} ms; stderr:\n${stderr}`));
        }, timeoutMs);
        const onExit = (code: number | null) => {
          done();
          reject(new Error(`worker exited with ${code} before reporting; stderr:\n${stderr}`));
        };
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
  };
}

/** A database both this process and the workers can open: a fresh PostgreSQL database, or a PGlite directory. */
async function prepareTarget(backend: Backend): Promise<{ target: DatabaseTarget; dispose(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-crash-'));
  const removeDir = () => fs.rmSync(dataDir, { recursive: true, force: true });
  if (backend === 'postgres') {
    const created = await createTestDatabase();
    return {
      target: { databaseUrl: created.url, dataDir },
      dispose: async () => {
        removeDir();
        await created.drop();
      },
    };
  }
  return { target: { dataDir: seedDataDir(dataDir) }, dispose: async () => removeDir() };
}

describe.concurrent.each(BACKENDS)('a worker killed mid-job on %s', (backend) => {
  const title = 'leaves the job to a new worker, which completes it with its effect written once';
  it(title, { timeout: 60_000 }, async () => {
    const { target, dispose } = await prepareTarget(backend);
    const children: ChildProcess[] = [];
    try {
      // PGlite allows one process per directory: set up, enqueue, and close before any worker opens it.
      let db = await openDatabase(target);
      for (const sql of CRASH_TABLES) await db.prisma.$executeRawUnsafe(sql);
      const job = crashJob(db.prisma);
      const queue = createJobQueue(db, { log, jobs: [job], ...CRASH_TUNING });
      await queue.start();
      const jobId = await queue.send(job, { firstAttemptSleepMs: 60_000 });
      await queue.stop({ timeoutMs: 1_000 });
      await db.close();

      const first = spawnWorker(target);
      children.push(first.child);
      await first.waitFor((r) => r.event === 'started' && r.jobId === jobId, 30_000);
      first.child.kill('SIGKILL');
      expect(await first.exited).toBeNull();

      const second = spawnWorker({ ...target, exitWhenCompleted: jobId });
      children.push(second.child);
      await second.waitFor((r) => r.event === 'completed', 40_000);
      expect(await second.exited).toBe(0);
      expect(second.reports.filter((r) => r.event === 'started').map((r) => r.attempt)).toEqual([2]);

      db = await openDatabase(target);
      try {
        const attempts = await db.prisma.$queryRaw<{ attempt: number; pid: number }[]>`
          SELECT attempt, pid FROM job_crash_attempts WHERE job_id = ${jobId}::uuid ORDER BY attempt`;
        expect(attempts).toEqual([
          { attempt: 1, pid: first.child.pid },
          { attempt: 2, pid: second.child.pid },
        ]);
        const effects = await db.prisma.$queryRaw<{ state: string; done_count: number }[]>`
          SELECT state, done_count FROM job_crash_effects WHERE job_id = ${jobId}::uuid`;
        expect(effects).toEqual([{ state: 'done', done_count: 1 }]);
        const jobs = await db.prisma.$queryRaw<{ state: string }[]>`
          SELECT state::text FROM pgboss.job WHERE id = ${jobId}::uuid`;
        expect(jobs).toEqual([{ state: 'completed' }]);
      } finally {
        await db.close();
      }
    } finally {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await dispose();
    }
  });
});
