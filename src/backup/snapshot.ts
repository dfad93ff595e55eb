import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PGlite } from '@electric-sql/pglite';

/**
 * What a backup holds, staged as the folder its archive is made from:
 *   manifest.json   what was taken, when, and from what kind of installation
 *   pgdata.tar      the embedded database (PGlite's own dump of its data directory; full backups)
 *   pulumi/         the file:// backend's stacks and the computers' workspaces (their settings)
 *   encryption.key  the key that opens sealed secrets and wraps the stacks' data keys (when it is a file)
 *   wiki-videos/    uploaded wiki videos (full backups)
 * Scratch folders, the lock, the admin socket and `local` computers' own files are not in it.
 */
export type BackupScope = 'full' | 'pulumi-state';

export interface BackupManifest {
  format: 1;
  scope: BackupScope;
  createdAt: string;
  database: 'pglite' | 'postgres';
  /** Whether encryption.key is in the archive; false when AGENTPLANE_ENCRYPTION_KEY supplies the key. */
  encryptionKeyIncluded: boolean;
  pulumiBackendUrl: string;
}

export const MANIFEST = 'manifest.json';
export const DATABASE_DUMP = 'pgdata.tar';
const KEY_FILE = 'encryption.key';
const COPIED = ['pulumi', 'wiki-videos'] as const;

export interface SnapshotSource {
  dataDir: string;
  /** The open embedded database, for a full backup; undefined on PostgreSQL. */
  pglite?: PGlite;
  pulumiBackendUrl: string;
  /** Runs `fn` while no Pulumi operation runs (the running server's gate; directly when none runs). */
  whileIdle<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * Stages a consistent snapshot in a new folder inside the data directory and returns it. The
 * database and the Pulumi state are taken in one moment with no Pulumi operation running (new
 * ones wait), so each stack's state is what its last finished operation left, and the database is
 * the one that saw it finish: a restore is what a crash at that moment would have left, with the
 * Pulumi state at rest. The database dump holds PGlite's query lock: no statement runs during it.
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
      encryptionKeyIncluded: existsSync(path.join(source.dataDir, KEY_FILE)),
      pulumiBackendUrl: source.pulumiBackendUrl,
    };
    await source.whileIdle(async () => {
      if (scope === 'full') {
        const dump = await source.pglite!.dumpDataDir('none');
        await pipeline(Readable.fromWeb(dump.stream() as never), createWriteStream(path.join(staging, DATABASE_DUMP), { mode: 0o600 }));
      }
      for (const dir of scope === 'full' ? COPIED : (['pulumi'] as const)) {
        const from = path.join(source.dataDir, dir);
        if (existsSync(from)) await cp(from, path.join(staging, dir), { recursive: true });
      }
    });
    if (manifest.encryptionKeyIncluded) await cp(path.join(source.dataDir, KEY_FILE), path.join(staging, KEY_FILE));
    await writeFile(path.join(staging, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
    return staging;
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}
