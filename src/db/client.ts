import fs from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient, type Prisma } from '../generated/prisma/client.ts';
import { lockDataDirectory } from './data-dir-lock.ts';
import { fencedEpochReads, notifiedEpoch, type AuthEpoch } from './auth-epoch.ts';
import { pipelinedReads } from './pg-reads.ts';
import { prioritizeCheckouts } from './pool-priority.ts';
import { pgliteAdapter } from './pglite-adapter.ts';
import { readsFromPglite } from './pglite-reads.ts';
import type { ReadRows } from './reads.ts';
import { pgliteListen, postgresListen, type Listen } from './listen.ts';
import { fromPgClient, fromPglite, type SqlConnection } from './sql.ts';

export { PrismaClient };
export type { Prisma };

/** A Prisma client or an interactive transaction: services accept either. */
export type Db = Prisma.TransactionClient;

interface Opened {
  prisma: PrismaClient;
  /** The reads behind every request (the credential lookup): prepared statements on the database's own driver. */
  reads: ReadRows;
  /** The credential-change counter as of a moment after each call (see auth-epoch.ts). */
  authEpoch: AuthEpoch;
  /** Notifications of a channel (NOTIFY), from any process writing to the database. */
  listen: Listen;
  /** PostgreSQL: Prisma's pool now (connections open, idle, requests waiting); PGlite has one connection and no pool. */
  poolUse?(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export type Database = ({ kind: 'pglite'; pglite: PGlite } | { kind: 'postgres'; url: string }) & Opened;

export type DatabaseTarget = { databaseUrl?: string; dataDir: string };

/** Connections of one process's Prisma pool on PostgreSQL (pg's default is 10). */
export const POOL_SIZE = 20;
const TRANSACTION_MAX_WAIT_MS = 30_000;
// Prisma's default is 5 s, which a busy process on two cores overruns in a burst (a 500 to the caller).
const TRANSACTION_TIMEOUT_MS = 15_000;

/** Where the embedded database keeps its files inside the data directory. */
export function pgliteDir(dataDir: string): string {
  return path.join(dataDir, 'pgdata');
}

/**
 * Opens PostgreSQL when a URL is given, otherwise the embedded PGlite database in the data
 * directory. PGlite is one in-process instance shared by Prisma and the job queue: it allows one
 * process per data directory, and a socket in front of it would interleave sessions.
 */
export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if (target.databaseUrl) {
    const url = target.databaseUrl;
    // The pool is ours (not the adapter's) so its use can be read: agentplane_db_pool_connections.
    // A burst (hundreds of messages posted at once, hundreds of turns storing their steps) queues
    // for the pool's connections: a transaction waits up to TRANSACTION_MAX_WAIT_MS for one
    // rather than Prisma's 2 s, after which it would fail the request with a 500.
    const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE });
    // An idle connection the server ends (a restart, a terminated backend) is an 'error' event on
    // the pool, which drops that client; the next query opens another. Prisma's adapter listens only
    // while it is connected, and an EventEmitter's 'error' with no listener would end the process.
    pool.on('error', () => {});
    const checkouts = prioritizeCheckouts(pool, POOL_SIZE);
    const prisma = new PrismaClient({
      adapter: new PrismaPg(pool),
      transactionOptions: { maxWait: TRANSACTION_MAX_WAIT_MS, timeout: TRANSACTION_TIMEOUT_MS },
    });
    const hot = pipelinedReads({ connectionString: url });
    return {
      kind: 'postgres',
      prisma,
      url,
      reads: hot.reads,
      authEpoch: fencedEpochReads(hot.reads),
      listen: postgresListen(url),
      poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: checkouts.waiting() }),
      close: async () => {
        await hot.close();
        await prisma.$disconnect();
        await pool.end();
      },
    };
  }
  // One process per embedded data directory: two writers on one PGlite directory corrupt it.
  const lock = lockDataDirectory(target.dataDir);
  const dir = pgliteDir(target.dataDir);
  let pglite: PGlite;
  try {
    await fs.mkdir(dir, { recursive: true });
    pglite = await PGlite.create(dir);
  } catch (err) {
    lock.release();
    throw err;
  }
  const prisma = new PrismaClient({ adapter: pgliteAdapter(pglite) });
  const reads = readsFromPglite(pglite);
  return {
    kind: 'pglite',
    prisma,
    pglite,
    reads,
    authEpoch: notifiedEpoch(pglite, reads),
    listen: pgliteListen(pglite),
    close: async () => {
      try {
        await prisma.$disconnect();
        await pglite.close();
      } finally {
        lock.release();
      }
    },
  };
}

/**
 * Runs `fn` with one raw SQL connection to the database (migrations, advisory locks).
 * On PostgreSQL it is a dedicated client, so session-level locks hold for the whole call.
 */
export async function withSqlConnection<T>(db: Database, fn: (conn: SqlConnection) => Promise<T>): Promise<T> {
  if (db.kind === 'pglite') return fn(fromPglite(db.pglite));
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return await fn(fromPgClient(client));
  } finally {
    await client.end();
  }
}
