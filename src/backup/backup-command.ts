import { createWriteStream, existsSync } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { request, type IncomingMessage } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
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
 * `agentplane backup --out FILE`: asks the server running on the data directory for a snapshot
 * through its admin socket, or, when none runs, takes it itself (holding the data directory's
 * lock, so no server starts meanwhile); encrypts it with AGENTPLANE_BACKUP_PASSPHRASE and writes
 * FILE whole or not at all (a temporary file beside it, renamed at the end).
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
  try {
    const plain = await fromServer(config.dataDir, scope);
    if (plain) await pipeline(endChecked(plain), (source) => encryptArchive(source, passphrase), createWriteStream(partial, { mode: 0o600 }));
    else
      await takeDirectly(config, scope, async (staging) =>
        pipeline(packTree(staging), (source) => encryptArchive(source, passphrase), createWriteStream(partial, { mode: 0o600 })),
      );
    await rename(partial, out);
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  }
  print(
    `backup (${scope === 'full' ? 'database, Pulumi state, encryption key' : 'Pulumi state and encryption key'}) written to ${out}: ${(await stat(out)).size} bytes in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}

/** The running server's snapshot stream, or undefined when no server listens on the data directory's socket. */
async function fromServer(dataDir: string, scope: BackupScope): Promise<IncomingMessage | undefined> {
  const socketPath = path.join(dataDir, ADMIN_SOCKET);
  if (!existsSync(socketPath)) return undefined;
  const res = await new Promise<IncomingMessage | undefined>((resolve, reject) => {
    const req = request({ socketPath, path: `/backup?scope=${scope}`, method: 'GET' }, resolve);
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? resolve(undefined) : reject(err)));
    req.end();
  });
  if (res && res.statusCode !== 200) {
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    throw new Error(`the server could not take the backup: ${(JSON.parse(body) as { detail?: string }).detail ?? body}`);
  }
  return res;
}

/** Passes the stream on, failing when it stops before the archive's end record (a server that died midway). */
async function* endChecked(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let tail = Buffer.alloc(0);
  for await (const chunk of source) {
    tail = Buffer.concat([tail, chunk]).subarray(-64);
    yield chunk;
  }
  if (!/\{"type":"end","entries":\d+\}$/.test(tail.toString('latin1'))) throw new Error('the server stopped sending the backup before its end');
}

/** No server runs: this process opens the installation itself for the moment of the snapshot. */
async function takeDirectly(config: Config, scope: BackupScope, write: (staging: string) => Promise<unknown>): Promise<void> {
  const source = {
    dataDir: config.dataDir,
    pulumiBackendUrl: pulumiBackendUrl(config.dataDir, config.managed.pulumiBackendUrl),
    whileIdle: <T>(fn: () => Promise<T>) => fn(),
  };
  if (scope === 'pulumi-state') return void (await stageAndWrite(await stageSnapshot(source, scope), write));
  if (!existsSync(path.join(config.dataDir, 'pgdata'))) throw new Error(`there is no installation in ${config.dataDir} (AGENTPLANE_DATA_DIR) to back up`);
  const db = await openDatabase({ dataDir: config.dataDir });
  let staging: string;
  try {
    staging = await stageSnapshot({ ...source, pglite: db.kind === 'pglite' ? db.pglite : undefined }, scope);
  } finally {
    await db.close();
  }
  await stageAndWrite(staging, write);
}

async function stageAndWrite(staging: string, write: (staging: string) => Promise<unknown>): Promise<void> {
  try {
    await write(staging);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
