import { startAdminSocket } from './backup/admin-socket.ts';
import { compose } from './compose.ts';
import type { Config } from './config.ts';
import { openDatabase, type Database } from './db/client.ts';
import { migrateDatabase } from './db/migrations.ts';
import type { JobQueue } from './jobs/queue.ts';
import { systemClock } from './lib/clock.ts';
import type { Logger } from './lib/logger.ts';
import { bootstrapOrganization, hasAnyOrganization } from './modules/organization/bootstrap.ts';
import type { ProviderRegistry } from './provisioning/providers/registry.ts';
import { pulumiBackendUrl } from './provisioning/pulumi/state-settings.ts';

export interface RunningServer {
  url: string;
  db: Database;
  queue: JobQueue;
  stop(): Promise<void>;
}

/**
 * Opens and migrates the database, bootstraps an empty one, starts the in-process worker and
 * serves the API. `stop` stops accepting requests, lets in-flight requests and running job
 * steps finish (bounded by the shutdown timeout), then closes the database.
 */
export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  const db = await openDatabase(config);
  await migrateDatabase(db, log);
  const plane = await compose({ config, db, log });
  await logProviders(plane.provisioner.providers, log);
  await plane.start();
  const admin = await startAdminSocket({
    dataDir: config.dataDir,
    db,
    stacks: plane.provisioner.stacks,
    pulumiBackendUrl: pulumiBackendUrl(config.dataDir, config.managed.pulumiBackendUrl),
    encryptionKeyFromEnvironment: config.encryptionKey !== undefined,
    log,
  });
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await admin.close();
      await plane.stop();
      await db.close();
      log.info('agentplane stopped');
    })());
  // The port is bound before the first start creates the owner: a busy port must not eat the key shown once.
  const { url } = await plane.listen(config.port, config.host).catch(async (err: NodeJS.ErrnoException) => {
    await stop();
    throw err.code === 'EADDRINUSE' ? new Error(`PORT ${config.port} is in use on ${config.host}: stop what listens there or set PORT to a free port`) : err;
  });
  if (!(await hasAnyOrganization(db.prisma))) await firstStart(db, config);
  log.info({ url, database: db.kind }, 'agentplane is serving');
  return { url, db, queue: plane.background!.queue, stop };
}

/** A newcomer whose provider list is empty reads here why, and what to run. */
async function logProviders(providers: ProviderRegistry, log: Logger): Promise<void> {
  for (const { name, available, missing } of await providers.status()) {
    if (available) {
      log.info({ provider: name }, `managed provider ${name} is available`);
      await providers.get(name)?.prepare?.(log);
    } else log.warn({ provider: name, missing }, `managed provider ${name} is not available: ${missing.join('; ')}`);
  }
}

async function firstStart(db: Database, config: Config): Promise<void> {
  const result = await bootstrapOrganization(db.prisma, config.bootstrap, systemClock);
  if (!result.apiKey) return;
  // Printed, never logged: this is the only time the key is shown.
  process.stdout.write(
    [
      '',
      `agentplane: first start: created organization "${config.bootstrap.org}" (${result.organizationId})`,
      `agentplane: owner ${config.bootstrap.email}; API key (shown once, store it now):`,
      `  ${result.apiKey}`,
      '',
    ].join('\n') + '\n',
  );
}
