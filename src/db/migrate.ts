// Applies prisma/migrations the way `prisma migrate deploy` does, without Prisma's native
// schema engine (downloaded at run time, unavailable offline and on PGlite). Both tools share
// the `_prisma_migrations` table and advisory lock, so either can take over from the other.
//
// `conn` must be one dedicated session (not a pool): the advisory lock and the per-migration
// transactions are session state.
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { SqlConnection } from './sql.ts';

export interface MigrateOptions {
  migrationsDir: string;
  log?: (msg: string) => void;
}

// Prisma Migrate's own lock key: runners and `prisma migrate deploy` also exclude each other.
const LOCK_KEY = 72707369;

// Exactly the table Prisma's schema engine creates on PostgreSQL.
const CREATE_HISTORY_TABLE = `CREATE TABLE "_prisma_migrations" (
    "id"                  VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"            VARCHAR(64) NOT NULL,
    "finished_at"         TIMESTAMPTZ,
    "migration_name"      VARCHAR(255) NOT NULL,
    "logs"                TEXT,
    "rolled_back_at"      TIMESTAMPTZ,
    "started_at"          TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

interface LocalMigration {
  name: string;
  script: string;
  checksum: string;
}

interface HistoryRow {
  id: string;
  checksum: string;
  migration_name: string;
  logs: string | null;
  started_at: Date | string;
  finished_at: Date | string | null;
  rolled_back_at: Date | string | null;
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

async function readLocalMigrations(migrationsDir: string): Promise<LocalMigration[]> {
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort((a, b) => (a < b ? -1 : 1));
  const migrations: LocalMigration[] = [];
  for (const name of names) {
    const file = path.join(migrationsDir, name, 'migration.sql');
    const bytes = await readFile(file).catch((error: Error) => {
      throw new Error(`migration ${name} has no readable migration.sql (${error.message})`);
    });
    migrations.push({ name, script: bytes.toString('utf8'), checksum: sha256(bytes) });
  }
  return migrations;
}

async function historyTableExists(conn: SqlConnection): Promise<boolean> {
  const { rows } = await conn.query<{ table: string | null }>(`SELECT to_regclass('"_prisma_migrations"')::text AS "table"`);
  return Boolean(rows[0]?.table);
}

/** Rows that still count; a row marked rolled back is history only, as in Prisma. */
async function readHistory(conn: SqlConnection): Promise<HistoryRow[]> {
  if (!(await historyTableExists(conn))) return [];
  const history = await conn.query<HistoryRow>(
    `SELECT id, checksum, migration_name, logs, started_at, finished_at, rolled_back_at
       FROM "_prisma_migrations" WHERE rolled_back_at IS NULL ORDER BY started_at`,
  );
  return history.rows;
}

// Prisma accepts a checksum over the file as is or with its line endings flipped, because git
// may check out CRLF on Windows.
function checksumMatches(script: string, checksum: string): boolean {
  const variants = [script, script.replaceAll('\r\n', '\n'), script.replaceAll('\n', '\r\n')];
  return variants.some((variant) => sha256(variant) === checksum);
}

function refuseBrokenHistory(history: HistoryRow[], local: LocalMigration[]): void {
  const failed = history.filter((row) => row.finished_at === null);
  if (failed.length > 0) {
    const details = failed
      .map((row) => `- ${row.migration_name} (started ${new Date(row.started_at).toISOString()}): ${row.logs?.trim() || 'no logs'}`)
      .join('\n');
    throw new Error(
      `found failed migrations in the database, new migrations will not be applied:\n${details}\n` +
        'Repair the database by hand, then mark the migration rolled back (it is retried on the next run) ' +
        `with \`prisma migrate resolve --rolled-back <name>\` or UPDATE "_prisma_migrations" SET rolled_back_at = now() ` +
        "WHERE migration_name = '<name>' AND finished_at IS NULL.",
    );
  }
  const byName = new Map(local.map((m) => [m.name, m]));
  const edited = history.filter((row) => {
    const file = byName.get(row.migration_name);
    return file !== undefined && !checksumMatches(file.script, row.checksum);
  });
  if (edited.length > 0) {
    throw new Error(
      `migrations were modified after they were applied: ${edited.map((r) => r.migration_name).join(', ')}. ` +
        'Restore the applied migration.sql files and put new changes in a new migration.',
    );
  }
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? `${error.message} (SQLSTATE ${code})` : error.message;
}

/**
 * One migration in one transaction, so a failure leaves no half-applied schema. Prisma runs
 * scripts unwrapped; a script with its own BEGIN/COMMIT (Prisma generates those for enum
 * changes) still works, it just commits our transaction early, like Prisma would.
 */
async function applyOne(conn: SqlConnection, migration: LocalMigration): Promise<void> {
  const id = randomUUID();
  try {
    await conn.exec('BEGIN');
    await conn.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
       VALUES ($1, $2, $3, clock_timestamp(), 0)`,
      [id, migration.checksum, migration.name],
    );
    await conn.exec(migration.script);
    await conn.query(`UPDATE "_prisma_migrations" SET finished_at = clock_timestamp(), applied_steps_count = applied_steps_count + 1 WHERE id = $1`, [id]);
    await conn.exec('COMMIT');
  } catch (error) {
    await conn.exec('ROLLBACK').catch(() => {});
    const logs = describeError(error);
    // Recorded outside the rolled-back transaction, so later runs refuse until someone resolves
    // it, as with Prisma. The upsert covers a script whose own COMMIT already saved the row.
    await conn.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, logs, started_at, applied_steps_count)
       VALUES ($1, $2, $3, $4, clock_timestamp(), 0)
       ON CONFLICT (id) DO UPDATE SET logs = EXCLUDED.logs`,
      [id, migration.checksum, migration.name, logs],
    );
    throw new Error(`migration ${migration.name} failed: ${logs}`, { cause: error });
  }
}

export async function applyMigrations(conn: SqlConnection, opts: MigrateOptions): Promise<{ applied: string[] }> {
  const local = await readLocalMigrations(opts.migrationsDir);
  // Blocks while another replica migrates; it then finds those migrations applied.
  await conn.query(`SELECT pg_advisory_lock(${LOCK_KEY})`);
  try {
    // Checked rather than IF NOT EXISTS, which logs a notice on every start; the lock rules out a race.
    if (!(await historyTableExists(conn))) await conn.exec(CREATE_HISTORY_TABLE);
    const history = await readHistory(conn);
    refuseBrokenHistory(history, local);
    const done = new Set(history.map((row) => row.migration_name));
    const applied: string[] = [];
    for (const migration of local.filter((m) => !done.has(m.name))) {
      opts.log?.(`applying migration ${migration.name}`);
      await applyOne(conn, migration);
      applied.push(migration.name);
    }
    return { applied };
  } finally {
    // Ignored on failure: the lock dies with the session anyway.
    await conn.query(`SELECT pg_advisory_unlock(${LOCK_KEY})`).catch(() => {});
  }
}

/** Migrations in the directory not yet successfully applied (for a readiness check). */
export async function pendingMigrations(conn: SqlConnection, opts: MigrateOptions): Promise<string[]> {
  const local = await readLocalMigrations(opts.migrationsDir);
  const done = new Set((await readHistory(conn)).filter((r) => r.finished_at !== null).map((r) => r.migration_name));
  return local.map((m) => m.name).filter((name) => !done.has(name));
}
