import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';

describe.skipIf(!BACKENDS.includes('postgres'))('the PostgreSQL pool when the server ends a connection', () => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  beforeAll(async () => {
    db = await openTestDatabase('postgres');
  });
  afterAll(() => db?.dispose());

  it('drops an idle connection without an uncaught error, even while Prisma is disconnected; the next query opens another', async () => {
    if (db.kind !== 'postgres') throw new Error('expected PostgreSQL');
    const uncaught: unknown[] = [];
    const record = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', record);
    const admin = new pg.Client({ connectionString: db.url });
    try {
      const [first] = await db.prisma.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      // Prisma's adapter stops listening to the pool when it disconnects (as close() does first),
      // while the pool still holds the idle connection.
      await db.prisma.$disconnect();
      // As a restart or an operator's pg_terminate_backend does, from a connection of its own.
      await admin.connect();
      await admin.query('SELECT pg_terminate_backend($1)', [first!.pid]);
      await sleep(300);
      const [second] = await db.prisma.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      expect(second!.pid).not.toBe(first!.pid);
      expect(uncaught).toEqual([]);
    } finally {
      await admin.end();
      process.off('uncaughtException', record);
    }
  });
});
