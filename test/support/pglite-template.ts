import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { MIGRATIONS_DIR, migrateDatabase } from '../../src/db/migrations.ts';
import { createJobQueue } from '../../src/jobs/queue.ts';
import { createLogger } from '../../src/lib/logger.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** An embedded (PGlite) database directory, migrated once for the whole run. */
    pgliteTemplate: string;
  }
}

/** Where the embedded database lives inside a data directory (src/db/client.ts's `pgdata`). */
const PGDATA = 'pgdata';

/**
 * For global setup: a migrated, empty PGlite database directory. A fresh PGlite directory costs its
 * initdb (5-15 s of WASM work); a copy of this one opens in under a second. It is kept in the
 * temporary directory between runs under a name that is a hash of PGlite's and pg-boss's versions
 * and every migration, so it is made again exactly when one of them changes.
 */
export async function pgliteTemplate(): Promise<string> {
  const dir = path.join(os.tmpdir(), `${PREFIX}${templateKey()}`);
  if (fs.existsSync(dir)) {
    // Used today: not pruned as old by a run on another branch.
    fs.utimesSync(dir, new Date(), new Date());
    return path.join(dir, PGDATA);
  }
  const building = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-pglite-building-'));
  const db = await openDatabase({ dataDir: building });
  try {
    await prepareTemplate(db);
  } finally {
    await db.close();
  }
  try {
    // Whole or not at all: another run making the same template at once may have won.
    fs.renameSync(building, dir);
  } catch {
    fs.rmSync(building, { recursive: true, force: true });
  }
  pruneOldTemplates(dir);
  return path.join(dir, PGDATA);
}

const PREFIX = 'agentplane-pglite-template-';

/**
 * What every test database starts with: the migrations, and the job queue's own tables (pg-boss
 * installs them at its first start, a few seconds on PGlite). The queues themselves are left to
 * each server's start, which makes them from the job catalog of the code under test.
 */
export async function prepareTemplate(db: Database): Promise<void> {
  const log = createLogger({ level: 'silent' });
  await migrateDatabase(db, log);
  const queue = createJobQueue(db, { log, jobs: [] });
  await queue.start();
  await queue.stop();
}

function templateKey(): string {
  const hash = createHash('sha256');
  for (const pkg of ['@electric-sql/pglite', 'pg-boss']) {
    const manifest = path.resolve(import.meta.dirname, '../../node_modules', pkg, 'package.json');
    hash.update((JSON.parse(fs.readFileSync(manifest, 'utf8')) as { version: string }).version);
  }
  const files = fs
    .readdirSync(MIGRATIONS_DIR, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(MIGRATIONS_DIR, path.join(e.parentPath, e.name)))
    .sort();
  for (const file of files) hash.update(file).update(fs.readFileSync(path.join(MIGRATIONS_DIR, file)));
  return hash.digest('hex').slice(0, 16);
}

/** Templates of other migrations left by earlier runs, once a day old (a run on another branch may still use a newer one). */
function pruneOldTemplates(keep: string): void {
  const dayAgo = Date.now() - 86_400_000;
  for (const name of fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith(PREFIX))) {
    const dir = path.join(os.tmpdir(), name);
    if (dir !== keep && fs.statSync(dir).mtimeMs < dayAgo) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Gives `dataDir` the run's migrated, empty embedded database, as if a server had started on it
 * once and made nothing: for tests whose subject is not the first start of an empty directory.
 */
export function seedDataDir(dataDir: string): string {
  fs.cpSync(inject('pgliteTemplate'), path.join(dataDir, PGDATA), { recursive: true });
  return dataDir;
}
