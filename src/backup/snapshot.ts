import { randomBytes } from 'node:crypto';
import { constants, cpSync, existsSync, linkSync, mkdirSync, readdirSync } from 'node:fs';
import { cp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { pgliteDir } from '../db/client.ts';

/**
 * What a backup holds, staged as the folder its archive is made from:
 *   manifest.json   what was taken, when, and from what kind of installation
 *   pgdata/         the embedded database's files (full backups)
 *   pulumi/         the file:// backend's stacks and the computers' workspaces (their settings)
 *   encryption.key  the key that opens sealed secrets and wraps the stacks' data keys (unless AGENTPLANE_ENCRYPTION_KEY is)
 *   wiki-videos/    uploaded wiki videos (full backups)
 * Scratch folders, the lock, the admin socket and `local` computers' own files are not in it.
 */
export type BackupScope = 'full' | 'pulumi-state';

export interface BackupManifest {
  format: 1;
  scope: BackupScope;
  createdAt: string;
  database: 'pglite' | 'postgres';
  /** Where the key that opens sealed secrets is: in the archive, AGENTPLANE_ENCRYPTION_KEY, or none made yet. */
  encryptionKey: 'included' | 'environment' | 'none';
  pulumiBackendUrl: string;
}

export const MANIFEST = 'manifest.json';
const DATABASE_DIR = path.basename(pgliteDir(''));
const STAGING = /^backup-[0-9a-f]{12}\.staging$/;
const KEY_FILE = 'encryption.key';
const VIDEOS = 'wiki-videos';

interface SnapshotSource {
  dataDir: string;
  /** The open embedded database, for a full backup; undefined on PostgreSQL. */
  pglite?: PGlite;
  pulumiBackendUrl: string;
  /** AGENTPLANE_ENCRYPTION_KEY is set: the operator keeps the key, and a key file is not the one in use. */
  encryptionKeyFromEnvironment: boolean;
  /** Runs `fn` while no Pulumi operation runs (the running server's gate; directly when none runs). */
  whileIdle<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * Stages a consistent snapshot in a new folder inside the data directory and returns it. The
 * database and the Pulumi state are taken in one moment with no Pulumi operation running (new
 * ones wait), so each stack's state is what its last finished operation left, and the database is
 * the one that saw it finish: a restore is what a crash at that moment would have left, with the
 * Pulumi state at rest.
 */
export async function stageSnapshot(source: SnapshotSource, scope: BackupScope): Promise<string> {
  if (scope === 'full' && !source.pglite)
    throw new Error('a full backup needs the embedded database; with PostgreSQL use pg_dump (or PITR) and --pulumi-state-only');
  const staging = path.join(source.dataDir, `backup-${randomBytes(6).toString('hex')}.staging`);
  await mkdir(staging, { mode: 0o700 });
  try {
    const manifest: BackupManifest = {
      format: 1,
      scope,
      createdAt: new Date().toISOString(),
      database: source.pglite ? 'pglite' : 'postgres',
      encryptionKey: source.encryptionKeyFromEnvironment ? 'environment' : existsSync(path.join(source.dataDir, KEY_FILE)) ? 'included' : 'none',
      pulumiBackendUrl: source.pulumiBackendUrl,
    };
    await source.whileIdle(async () => {
      manifest.createdAt = new Date().toISOString();
      // Synchronous copies: the state is small, and the server's busy event loop must not stretch the pause.
      if (existsSync(path.join(source.dataDir, 'pulumi'))) cpSync(path.join(source.dataDir, 'pulumi'), path.join(staging, 'pulumi'), { recursive: true });
      // The database's files, copied under the lock every PGlite statement takes (the one its own
      // dumpDataDir holds): no statement runs meanwhile, and each commit is written at commit, so the
      // copy is what a crash would leave. A copy-on-write clone where the file system has one.
      if (scope === 'full') {
        await source.pglite!._runExclusiveQuery(async () =>
          cpSync(pgliteDir(source.dataDir), path.join(staging, DATABASE_DIR), { recursive: true, mode: constants.COPYFILE_FICLONE }),
        );
      }
    });
    // Videos are written once (a temporary file renamed into place): links are a snapshot of them.
    if (scope === 'full') linkTree(path.join(source.dataDir, VIDEOS), path.join(staging, VIDEOS));
    if (manifest.encryptionKey === 'included') await cp(path.join(source.dataDir, KEY_FILE), path.join(staging, KEY_FILE));
    await writeFile(path.join(staging, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
    return staging;
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}

/** Hard links of the files under `from` (but unfinished uploads, `*.part`) in a new tree `to`. */
function linkTree(from: string, to: string): void {
  if (!existsSync(from)) return;
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.isDirectory()) linkTree(path.join(from, entry.name), path.join(to, entry.name));
    else if (entry.isFile() && !entry.name.endsWith('.part')) linkSync(path.join(from, entry.name), path.join(to, entry.name));
  }
}

/** Removes staging folders a backup that died midway left in the data directory. */
export async function removeStaleStaging(dataDir: string): Promise<void> {
  const names = await readdir(dataDir).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => STAGING.test(n)).map((n) => rm(path.join(dataDir, n), { recursive: true, force: true })));
}
