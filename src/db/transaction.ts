import type { Db, PrismaClient } from './client.ts';

/**
 * Runs `fn` in the caller's transaction when given one, else in a new transaction of its own.
 * An interactive transaction's client lacks `$connect` (it still has `$transaction`: Prisma 7
 * nests transactions as savepoints, which on PGlite wait for the outer transaction's lock).
 */
export function inTransaction<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  const client = db as Partial<PrismaClient>;
  return typeof client.$connect === 'function' ? (db as PrismaClient).$transaction(fn) : fn(db);
}
