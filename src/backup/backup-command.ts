import { createWriteStream, existsSync } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Config } from '../config.ts';
import { openDatabase } from '../db/client.ts';
import { pulumiBackendUrl } from '../provisioning/pulumi/state-settings.ts';
import { ADMIN_SOCKET } from './admin-socket.ts';
import { encryptArchive } from './archive-crypto.ts';
import { packTree } from './archive-entries.ts';
import { backupPassphrase } from './passphrase.ts';
import { stageSnapshot, type BackupScope } from './snapshot.ts';

export interface BackupOptions {
  out: string;
  pulumiStateOnly?: boolean;
}

/**
 * `agentplane backup --out FILE`: the server running on the data directory stages a snapshot
 * when asked through its admin socket; when none runs, this process stages it itself, holding the
 * data directory's lock so no server starts meanwhile. The snapshot is compressed (gzip), then
 * encrypted with AGENTPLANE_BACKUP_PASSPHRASE, into FILE, which appears whole or not at all (a
 * temporary file beside it, renamed at the end).
 */
export async function runBackup(config: Config, opts: BackupOptions, print: (line: string) => void): Promise<void> {
  const passphrase = backupPassphrase();
  const scope: BackupScope = opts.pulumiStateOnly ? 'pulumi-state' : 'full';
  if (scope === 'full' && config.databaseUrl) {
    throw new Error(
      'this installation uses PostgreSQL (DATABASE_URL): back the database up with pg_dump or PITR, and the Pulumi state and encryption key with `agentplane backup --pulumi-state-only` (README, "Backup and restore")',
    );
  }
  const out = path.resolve(opts.out);
  const partial = `${out}.partial-${process.pid}`;
  const started = Date.now();
  const staging = (await fromServer(config.dataDir, scope)) ?? (await takeDirectly(config, scope));
  try {
    await pipeline(packTree(staging), createGzip({ level: 1 }), (source) => encryptArchive(source, passphrase), createWriteStream(partial, { mode: 0o600 }));
    await rename(partial, out);
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  const what = scope === 'full' ? 'database, Pulumi state, encryption key' : 'Pulumi state and encryption key';
  print(`backup (${what}) written to ${out}: ${(await stat(out)).size} bytes in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** The folder the running server staged its snapshot in, or undefined when no server listens on the data directory's socket. */
async function fromServer(dataDir: string, scope: BackupScope): Promise<string | undefined> {
  const socketPath = path.join(dataDir, ADMIN_SOCKET);
  if (!existsSync(socketPath)) return undefined;
  const answer = await new Promise<{ status: number; body: string } | undefined>((resolve, reject) => {
    const req = request({ socketPath, path: `/backup?scope=${scope}`, method: 'POST' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    // No server behind a socket file a killed one left: take the snapshot directly.
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? resolve(undefined) : reject(err)));
    req.end();
  });
  if (!answer) return undefined;
  const body = JSON.parse(answer.body) as { staging?: string; detail?: string };
  if (answer.status !== 200 || !body.staging) throw new Error(`the server could not take the backup: ${body.detail ?? answer.body}`);
  return body.staging;
}

/** No server runs: this process opens the installation itself for the moment of the snapshot. */
async function takeDirectly(config: Config, scope: BackupScope): Promise<string> {
  const source = {
    dataDir: config.dataDir,
    pulumiBackendUrl: pulumiBackendUrl(config.dataDir, config.managed.pulumiBackendUrl),
    encryptionKeyFromEnvironment: config.encryptionKey !== undefined,
    whileIdle: <T>(fn: () => Promise<T>) => fn(),
  };
  if (scope === 'pulumi-state') return stageSnapshot(source, scope);
  if (!existsSync(path.join(config.dataDir, 'pgdata'))) throw new Error(`there is no installation in ${config.dataDir} (AGENTPLANE_DATA_DIR) to back up`);
  const db = await openDatabase({ dataDir: config.dataDir });
  try {
    return await stageSnapshot({ ...source, pglite: db.kind === 'pglite' ? db.pglite : undefined }, scope);
  } finally {
    await db.close();
  }
}
