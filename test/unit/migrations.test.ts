import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { applyMigrations, pendingMigrations } from '../../src/db/migrate.ts';
import { fromPglite, type SqlConnection } from '../../src/db/sql.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MIGRATIONS_DIR = path.join(ROOT, 'prisma/migrations');
const SCRIPT = path.join(ROOT, 'scripts/migration-new.mjs');
const TABLES = ['api_keys', 'audit_records', 'memberships', 'organizations', 'service_accounts', 'users'];

// The parts of scripts/migration-new.mjs used here: Prisma's own (wasm) schema engine, which
// runs the same code as `prisma migrate deploy`.
interface SchemaEngineKit {
  openSchemaEngine(db: PGlite): Promise<{
    applyMigrations(input: { migrationsList: unknown; filters: unknown }): Promise<{ appliedMigrationNames: string[] }>;
    diagnoseMigrationHistory(input: { migrationsList: unknown; optInToShadowDatabase: boolean; filters: unknown }): Promise<{
      editedMigrationNames: string[];
      failedMigrationNames: string[];
      history: unknown;
    }>;
    free(): void;
  }>;
  readMigrationsList(dir: string): Promise<unknown>;
}

const NO_FILTERS = { externalTables: [], externalEnums: [] };

/** `prisma migrate deploy`, then what `prisma migrate status` would report. */
async function deployWithPrismaEngine(db: PGlite, migrationsDir: string) {
  const kit = (await import(pathToFileURL(SCRIPT).href)) as SchemaEngineKit;
  const engine = await kit.openSchemaEngine(db);
  try {
    const migrationsList = await kit.readMigrationsList(migrationsDir);
    const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList, filters: NO_FILTERS });
    const status = await engine.diagnoseMigrationHistory({ migrationsList, optInToShadowDatabase: false, filters: NO_FILTERS });
    return { applied: appliedMigrationNames, ...status };
  } finally {
    engine.free();
  }
}

async function localMigrationNames(): Promise<string[]> {
  const entries = await readdir(MIGRATIONS_DIR, { withFileTypes: true });
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

async function publicTables(conn: SqlConnection): Promise<string[]> {
  const { rows } = await conn.query<{ name: string }>(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`);
  return rows.map((r) => r.name);
}

/** A migrations folder with the real migrations plus extra ones. */
async function tempMigrations(extra: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'agentplane-migrations-'));
  await cp(MIGRATIONS_DIR, dir, { recursive: true });
  for (const [name, sql] of Object.entries(extra)) {
    await mkdir(path.join(dir, name));
    await writeFile(path.join(dir, name, 'migration.sql'), sql);
  }
  return dir;
}

// One PGlite per file (creating one takes seconds); each test starts from an empty schema.
let db: PGlite;
let conn: SqlConnection;
const tempDirs: string[] = [];

beforeAll(async () => {
  db = new PGlite();
  await db.waitReady;
  conn = fromPglite(db);
}, 60_000);

afterAll(async () => {
  await db?.close();
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

beforeEach(async () => {
  await conn.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
});

describe('applyMigrations', () => {
  it('applies the real migrations to an empty database', async () => {
    const names = await localMigrationNames();
    expect(await pendingMigrations(conn, { migrationsDir: MIGRATIONS_DIR })).toEqual(names);

    const logged: string[] = [];
    const result = await applyMigrations(conn, { migrationsDir: MIGRATIONS_DIR, log: (m) => logged.push(m) });

    expect(result.applied).toEqual(names);
    expect(logged).toHaveLength(names.length);
    expect(await publicTables(conn)).toEqual(expect.arrayContaining([...TABLES, '_prisma_migrations']));
    expect(await pendingMigrations(conn, { migrationsDir: MIGRATIONS_DIR })).toEqual([]);

    const { rows } = await conn.query<{ checksum: string; finished_at: Date | null; applied_steps_count: number }>(
      `SELECT checksum, finished_at, applied_steps_count FROM "_prisma_migrations" WHERE migration_name = $1`,
      [names[0]],
    );
    const bytes = await readFile(path.join(MIGRATIONS_DIR, names[0]!, 'migration.sql'));
    expect(rows).toEqual([{ checksum: createHash('sha256').update(bytes).digest('hex'), finished_at: expect.any(Date), applied_steps_count: 1 }]);
  });

  it('applies nothing on a second run and releases its lock', async () => {
    await applyMigrations(conn, { migrationsDir: MIGRATIONS_DIR });
    expect(await applyMigrations(conn, { migrationsDir: MIGRATIONS_DIR })).toEqual({ applied: [] });

    const { rows } = await conn.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'`);
    expect(rows[0]!.n).toBe(0);
  });

  it('refuses to run when an applied migration was modified', async () => {
    await applyMigrations(conn, { migrationsDir: MIGRATIONS_DIR });
    await conn.query(`UPDATE "_prisma_migrations" SET checksum = repeat('0', 64)`);

    await expect(applyMigrations(conn, { migrationsDir: MIGRATIONS_DIR })).rejects.toThrow(/modified after they were applied/);
  });

  it('records a failing migration, rolls it back, and refuses later runs until resolved', async () => {
    const broken = '29990101000000_broken';
    const dir = await tempMigrations({ [broken]: 'CREATE TABLE half_done (id int);\nSELECT 1/0;\n' });
    tempDirs.push(dir);

    await expect(applyMigrations(conn, { migrationsDir: dir })).rejects.toThrow(/29990101000000_broken failed: division by zero/);
    expect(await publicTables(conn)).not.toContain('half_done');
    const { rows } = await conn.query<{ finished_at: Date | null; logs: string }>(
      `SELECT finished_at, logs FROM "_prisma_migrations" WHERE migration_name = $1`,
      [broken],
    );
    expect(rows).toEqual([{ finished_at: null, logs: expect.stringContaining('division by zero') }]);

    await expect(applyMigrations(conn, { migrationsDir: dir })).rejects.toThrow(/found failed migrations/);
    expect(await pendingMigrations(conn, { migrationsDir: dir })).toEqual([broken]);

    // What `prisma migrate resolve --rolled-back` does; the fixed migration then applies.
    await conn.query(`UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE migration_name = $1`, [broken]);
    await writeFile(path.join(dir, broken, 'migration.sql'), 'CREATE TABLE half_done (id int);\n');
    expect(await applyMigrations(conn, { migrationsDir: dir })).toEqual({ applied: [broken] });
  });

  it('applies a script that manages its own transaction, as Prisma generates for enum changes', async () => {
    const name = '29990101000000_enum_change';
    const dir = await tempMigrations({
      [name]: `BEGIN;
CREATE TYPE "MembershipStatus_new" AS ENUM ('active');
ALTER TABLE "memberships" ALTER COLUMN "status" DROP DEFAULT;
ALTER TABLE "memberships" ALTER COLUMN "status" TYPE "MembershipStatus_new" USING ("status"::text::"MembershipStatus_new");
ALTER TYPE "MembershipStatus" RENAME TO "MembershipStatus_old";
ALTER TYPE "MembershipStatus_new" RENAME TO "MembershipStatus";
DROP TYPE "MembershipStatus_old";
ALTER TABLE "memberships" ALTER COLUMN "status" SET DEFAULT 'active';
COMMIT;
`,
    });
    tempDirs.push(dir);

    expect((await applyMigrations(conn, { migrationsDir: dir })).applied).toContain(name);
    expect(await pendingMigrations(conn, { migrationsDir: dir })).toEqual([]);
  });
});

describe('compatibility with prisma migrate deploy (its wasm schema engine)', () => {
  it('takes over a history written by this runner', async () => {
    await applyMigrations(conn, { migrationsDir: MIGRATIONS_DIR });
    // Deploy itself ignores checksums; the status diagnosis compares them.
    expect(await deployWithPrismaEngine(db, MIGRATIONS_DIR)).toMatchObject({
      applied: [],
      editedMigrationNames: [],
      failedMigrationNames: [],
      history: null,
    });
  }, 30_000);

  it('takes over a history written by Prisma', async () => {
    expect((await deployWithPrismaEngine(db, MIGRATIONS_DIR)).applied).toEqual(await localMigrationNames());
    expect(await applyMigrations(conn, { migrationsDir: MIGRATIONS_DIR })).toEqual({ applied: [] });
    expect(await pendingMigrations(conn, { migrationsDir: MIGRATIONS_DIR })).toEqual([]);
  }, 30_000);
});

describe('scripts/migration-new.mjs --check', () => {
  it('finds no drift between prisma/schema.prisma and prisma/migrations', async () => {
    const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) => {
      execFile(process.execPath, [SCRIPT, '--check'], { cwd: ROOT }, (error, out, err) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout: `${out}${err}` }),
      );
    });
    expect(stdout).toContain('no changes');
    expect(code).toBe(0);
  }, 60_000);
});
