import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../lib/logger.ts';
import { withSqlConnection, type Database } from './client.ts';
import { applyMigrations, pendingMigrations } from './migrate.ts';

/** prisma/migrations, found from this file so the CLI works from any working directory. */
export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../prisma/migrations');

export async function migrateDatabase(db: Database, log: Logger): Promise<string[]> {
  const { applied } = await withSqlConnection(db, (conn) => applyMigrations(conn, { migrationsDir: MIGRATIONS_DIR, log: (msg) => log.info(msg) }));
  return applied;
}

export function listPendingMigrations(db: Database): Promise<string[]> {
  return withSqlConnection(db, (conn) => pendingMigrations(conn, { migrationsDir: MIGRATIONS_DIR }));
}
