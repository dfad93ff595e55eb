import pg from 'pg';
import { openDatabase, type Database } from '../src/db/client.ts';
import { migrateDatabase } from '../src/db/migrations.ts';
import type { Logger } from '../src/lib/logger.ts';
import { startPostgres } from '../test/support/postgres-server.ts';

/**
 * A private PostgreSQL cluster with one migrated database `name`, for benchmarks that measure
 * the production database. `stop` closes the database and removes the cluster.
 */
export async function openBenchPostgres(name: string, log: Logger): Promise<{ db: Database; url: string; stop(): Promise<void> }> {
  const server = await startPostgres();
  if (!server) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
  try {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = server.url.replace(/\/postgres$/, `/${name}`);
    const db = await openDatabase({ databaseUrl: url, dataDir: '/tmp' });
    await migrateDatabase(db, log);
    return {
      db,
      url,
      stop: async () => {
        await db.close();
        server.stop();
      },
    };
  } catch (err) {
    server.stop();
    throw err;
  }
}
