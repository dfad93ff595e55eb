import { existsSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Database } from '../db/client.ts';
import type { Logger } from '../lib/logger.ts';
import type { ComputerStacks } from '../provisioning/pulumi/computer-stacks.ts';
import { packTree } from './archive-entries.ts';
import { stageSnapshot, type BackupScope } from './snapshot.ts';

/**
 * The running server's local administration socket, `<data dir>/admin.sock`. Whoever can open it
 * can read the data directory already (it is the server user's alone, 0700), so reaching it is
 * the authorization: a backup holds every organization's data and the installation's key, more
 * than any organization's owner may take, so it is not an API route.
 */
export const ADMIN_SOCKET = 'admin.sock';

// sun_path holds 108 bytes with its terminating NUL.
const SOCKET_PATH_MAX = 107;

export interface AdminSocketDeps {
  dataDir: string;
  db: Database;
  stacks: Pick<ComputerStacks, 'whileIdle'>;
  pulumiBackendUrl: string;
  log: Logger;
}

/** Serves `GET /backup?scope=full|pulumi-state`: the archive's plain contents, taken by this process (see stageSnapshot). */
export async function startAdminSocket(deps: AdminSocketDeps): Promise<{ close(): Promise<void> }> {
  const file = path.join(deps.dataDir, ADMIN_SOCKET);
  if (Buffer.byteLength(file) > SOCKET_PATH_MAX) {
    deps.log.warn({ file }, 'the data directory path is too long for the admin socket: `agentplane backup` needs the server stopped');
    return { close: async () => undefined };
  }
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://admin');
    const scope = url.searchParams.get('scope') as BackupScope | null;
    if (req.method !== 'GET' || url.pathname !== '/backup' || (scope !== 'full' && scope !== 'pulumi-state')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'GET /backup?scope=full|pulumi-state' }));
      return;
    }
    const source = {
      dataDir: deps.dataDir,
      pglite: deps.db.kind === 'pglite' ? deps.db.pglite : undefined,
      pulumiBackendUrl: deps.pulumiBackendUrl,
      whileIdle: deps.stacks.whileIdle,
    };
    const started = Date.now();
    stageSnapshot(source, scope).then(
      async (staging) => {
        try {
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          await pipeline(packTree(staging), res);
          deps.log.info({ scope, ms: Date.now() - started }, 'backup taken');
        } catch (err) {
          deps.log.error({ err }, 'backup stream failed');
          res.destroy();
        } finally {
          await rm(staging, { recursive: true, force: true });
        }
      },
      (err: unknown) => {
        deps.log.error({ err }, 'backup failed');
        res.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: err instanceof Error ? err.message : String(err) }));
      },
    );
  });
  // A socket file left by a killed server: the data directory's lock (or PostgreSQL's one server per directory) makes it stale.
  if (existsSync(file)) rmSync(file);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(file, resolve));
  return {
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
