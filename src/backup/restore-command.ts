import { createReadStream, existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { decryptArchive } from './archive-crypto.ts';
import { unpackTree } from './archive-entries.ts';
import { backupPassphrase } from './passphrase.ts';
import { MANIFEST, type BackupManifest } from './snapshot.ts';

/**
 * `agentplane restore FILE` into AGENTPLANE_DATA_DIR, which must be empty or absent. The archive
 * is decrypted, checked whole and unpacked into a folder beside the target, and only then does
 * that folder become the data directory (a rename): a wrong passphrase, a damaged or truncated
 * archive leave nothing behind. The server's next start replays the database's log to the moment
 * the backup was taken.
 */
export async function runRestore(dataDir: string, file: string, print: (line: string) => void): Promise<void> {
  const passphrase = backupPassphrase();
  // What is restored is the control plane's alone, as the server keeps its data directory.
  process.umask(0o077);
  const target = path.resolve(dataDir);
  if (!existsSync(file)) throw new Error(`${file}: no such file`);
  await assertEmpty(target);
  const work = `${target}.restoring-${randomBytes(4).toString('hex')}`;
  await mkdir(path.dirname(target), { recursive: true });
  await mkdir(work, { mode: 0o700 });
  let manifest: BackupManifest;
  try {
    await pipeline(
      Readable.from(decryptArchive(createReadStream(file, { highWaterMark: 1 << 20 }), passphrase)),
      createGunzip(),
      (plain: AsyncIterable<Buffer>) => unpackTree(plain, work),
    );
    manifest = JSON.parse(await readFile(path.join(work, MANIFEST), 'utf8')) as BackupManifest;
    await rm(path.join(work, MANIFEST));
    await assertEmpty(target);
    if (existsSync(target)) await rmdir(target);
    await rename(work, target);
  } catch (err) {
    await rm(work, { recursive: true, force: true });
    throw err;
  }
  print(`restored the ${manifest.scope === 'full' ? 'installation' : 'Pulumi state and encryption key'} taken at ${manifest.createdAt} into ${target}`);
  if (manifest.encryptionKey === 'environment')
    print('the installation used AGENTPLANE_ENCRYPTION_KEY: start it with the same key, or its sealed secrets and stacks cannot be opened');
  if (manifest.scope === 'pulumi-state') print('restore the PostgreSQL database to the same moment (pg_restore or PITR) before starting the server');
  if (!manifest.pulumiBackendUrl.startsWith('file://'))
    print(`the stacks' state lives in ${manifest.pulumiBackendUrl}, not in the archive: keep AGENTPLANE_PULUMI_BACKEND_URL pointing there`);
}

async function assertEmpty(dir: string): Promise<void> {
  const entries = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  if (entries.length > 0) throw new Error(`${dir} (AGENTPLANE_DATA_DIR) is not empty: restore into an empty or new directory`);
}
