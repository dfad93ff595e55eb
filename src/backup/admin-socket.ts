import { chmodSync, existsSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import type { Database } from '../db/client.ts';
import type { Logger } from '../lib/logger.ts';
import type { ComputerStacks } from '../provisioning/pulumi/computer-stacks.ts';
import { removeStaleStaging, stageSnapshot, type BackupScope } from './snapshot.ts';

/**
 * The running server's local administration socket, `<data dir>/admin.sock`. Whoever can open it
 * can read the data directory already (it is the server user's alone, 0700), so reaching it is
 * the authorization: a backup holds every organization's data and the installation's key, more
 * than any organization's owner may take, so it is not an API route.
 */
export const ADMIN_SOCKET = 'admin.sock';

// sun_path holds 108 bytes with its terminating NUL.
const SOCKET_PATH_MAX = 107;

interface AdminSocketDeps {
  dataDir: string;
  db: Database;
  stacks: Pick<ComputerStacks, 'whileIdle'>;
  pulumiBackendUrl: string;
  encryptionKeyFromEnvironment: boolean;
  log: Logger;
}

/**
 * Serves `POST /backup?scope=full|pulumi-state`: this process stages the snapshot (see
 * stageSnapshot) and answers its folder, `{"staging": path}`; the command archives that folder and
 * removes it. The archive is made by the command, away from the event loop that serves the API.
 */
export async function startAdminSocket(deps: AdminSocketDeps): Promise<{ close(): Promise<void> }> {
  const file = path.join(deps.dataDir, ADMIN_SOCKET);
  if (Buffer.byteLength(file) > SOCKET_PATH_MAX) {
    deps.log.warn({ file }, 'the data directory path is too long for the admin socket: `agentplane backup` needs the server stopped');
    return { close: async () => undefined };
  }
  await removeStaleStaging(deps.dataDir);
  const server = createServer((req, res) => {
    const reply = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const url = new URL(req.url ?? '/', 'http://admin');
    const scope = url.searchParams.get('scope') as BackupScope | null;
    if (req.method !== 'POST' || url.pathname !== '/backup' || (scope !== 'full' && scope !== 'pulumi-state')) {
      return reply(404, { detail: 'POST /backup?scope=full|pulumi-state' });
    }
    const source = {
      dataDir: deps.dataDir,
      pglite: deps.db.kind === 'pglite' ? deps.db.pglite : undefined,
      pulumiBackendUrl: deps.pulumiBackendUrl,
      encryptionKeyFromEnvironment: deps.encryptionKeyFromEnvironment,
      whileIdle: deps.stacks.whileIdle,
    };
    const started = Date.now();
    stageSnapshot(source, scope).then(
      (staging) => {
        deps.log.info({ scope, ms: Date.now() - started }, 'backup snapshot taken');
        reply(200, { staging });
      },
      (err: unknown) => {
        deps.log.error({ err }, 'backup snapshot failed');
        reply(409, { detail: err instanceof Error ? err.message : String(err) });
      },
    );
  });
  // A socket file left by a killed server: the data directory's lock (or PostgreSQL's one server per directory) makes it stale.
  if (existsSync(file)) rmSync(file);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(file, resolve));
  chmodSync(file, 0o600);
  return {
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
