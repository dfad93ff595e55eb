import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POOL_SIZE } from '../../src/db/client.ts';
import { prioritizeCheckouts, urgently } from '../../src/db/pool-priority.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

/** The process's pool on PostgreSQL gives a free connection to urgent work first (a turn's start in a burst). */
describe.skipIf(!BACKENDS.includes('postgres'))('connection checkouts, urgent first', () => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  beforeAll(async () => {
    db = await openTestDatabase('postgres');
  });
  afterAll(() => db?.dispose());

  it('through Prisma: with every connection taken, an urgent transaction runs before the queries queued ahead of it', async () => {
    // Every pooled connection held by a transaction that waits to be let go.
    const holders: (() => void)[] = [];
    const held = Array.from({ length: POOL_SIZE }, () =>
      db.prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT 1`;
        await new Promise<void>((resolve) => holders.push(resolve));
      }),
    );
    await waitFor('every connection held', () => holders.length === POOL_SIZE);
    const done: string[] = [];
    const normal = [1, 2, 3].map((n) => db.prisma.$queryRaw`SELECT ${n}::int AS n`.then(() => done.push(`normal ${n}`)));
    await waitFor('the queries queued', () => db.poolUse!().waiting === 3);
    const urgent = urgently(() => db.prisma.$transaction(async (tx) => tx.$queryRaw`SELECT 'urgent'`)).then(() => done.push('urgent'));
    await waitFor('the urgent one queued', () => db.poolUse!().waiting === 4);
    holders.shift()!();
    await waitFor('the first to run', () => done.length > 0);
    expect(done[0]).toBe('urgent');
    // Then the rest, in the order they asked.
    for (const release of holders.splice(0)) release();
    await Promise.all([...normal, urgent, ...held]);
    expect(done).toEqual(['urgent', 'normal 1', 'normal 2', 'normal 3']);
    expect(db.poolUse!().waiting).toBe(0);
  });

  it('frees a connection once however often its client is released, and after a checkout that failed', async () => {
    if (db.kind !== 'postgres') throw new Error('expected PostgreSQL');
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    pool.on('error', () => {});
    const checkouts = prioritizeCheckouts(pool, 1);
    try {
      const first = await pool.connect();
      const second = pool.connect();
      expect(checkouts.waiting()).toBe(1);
      first.release();
      // pg-pool refuses a second release; the gate must not count the connection free twice.
      expect(() => first.release()).toThrow(/already been released/);
      const client = await second;
      // pool.query (the callback form pg-pool uses inside) goes through the gate too, behind it.
      const query = pool.query('SELECT 2 AS n');
      await waitFor('the query queued', () => checkouts.waiting() === 1);
      client.release();
      expect((await query).rows).toEqual([{ n: 2 }]);
    } finally {
      await pool.end();
    }
    // A checkout that fails gives its turn back: the next one is tried, not left waiting.
    const down = new pg.Pool({ connectionString: 'postgresql://nobody@127.0.0.1:1/none', max: 1, connectionTimeoutMillis: 2_000 });
    down.on('error', () => {});
    prioritizeCheckouts(down, 1);
    try {
      await expect(down.connect()).rejects.toThrow();
      await expect(down.connect()).rejects.toThrow();
    } finally {
      await down.end();
    }
  });
});
