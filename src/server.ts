import type { Server } from 'node:http';
import { createEgressGuard } from './egress/guard.ts';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.ts';
import type { Config } from './config.ts';
import { openDatabase, type Database } from './db/client.ts';
import { listPendingMigrations, migrateDatabase } from './db/migrations.ts';
import { startBackground } from './background.ts';
import type { JobQueue } from './jobs/queue.ts';
import { systemClock } from './lib/clock.ts';
import type { Logger } from './lib/logger.ts';
import { syncGitIntegrations } from './modules/integrations/seed.ts';
import { startMachineAccess } from './modules/computers/machine-access.ts';
import { bootstrapOrganization, hasAnyOrganization } from './modules/organization/bootstrap.ts';
import { sealStoredCustomModelKeys } from './modules/organization/enterprise-controls.ts';
import { createEventHub } from './modules/events/hub.ts';
import { createProvisioner } from './provisioning/provisioner.ts';
import type { ProviderRegistry } from './provisioning/providers/registry.ts';
import { attachRelay } from './relay/upgrade.ts';
import { relayUrls } from './relay/urls.ts';

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
  if (!(await hasAnyOrganization(db.prisma))) await firstStart(db, config);
  const machines = await startMachineAccess({ ...config, holdsTunnels: true }, db.prisma, log);
  // The server's own address is known once it listens; AGENTPLANE_PUBLIC_URL names it behind a proxy.
  let listening: string | undefined;
  const urls = relayUrls(() => config.relay.publicUrl ?? listening);
  await syncGitIntegrations(db.prisma, machines.secrets, config.gitIntegrations);
  await sealStoredCustomModelKeys({ db: db.prisma, secrets: machines.secrets });
  let boundPort: number | undefined;
  const provisioner = createProvisioner(config, machines.secrets, () => boundPort ?? config.port);
  const egress = createEgressGuard(config.egress);
  await logProviders(provisioner.providers, log);
  // Every replica sends jobs and registers the schedules; with AGENTPLANE_WORKER=false it leaves
  // running them to `agentplane worker`. The analytics roll-up catches up on days missed while stopped.
  const background = await startBackground({ db, config, log, clock: systemClock, machines, provisioner, egress, work: config.runWorker });
  const { queue } = background;
  const eventHub = createEventHub({ db: db.prisma, listen: db.listen, log });
  await eventHub.start();
  const { app, relay } = createApp({
    config,
    prisma: db.prisma,
    reads: db.reads,
    authEpoch: db.authEpoch,
    log,
    clock: systemClock,
    providers: provisioner.providers,
    queue,
    machines,
    relayUrls: urls,
    pendingMigrations: () => listPendingMigrations(db),
    egress,
    eventHub,
  });
  const server = await listen(app, config.port, config.host);
  if (relay) attachRelay(server, relay.endpoints, log);
  const { port } = server.address() as AddressInfo;
  boundPort = port;
  const url = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;
  listening = url;
  log.info({ url, database: db.kind }, 'agentplane is serving');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      const deadline = Date.now() + config.shutdownTimeoutMs;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Event streams never end by themselves: end them, and clients reconnect to another replica.
      await eventHub.close();
      // Keep-alive connections turn idle as their last response ends; close each as it does.
      const sweeper = setInterval(() => server.closeIdleConnections(), 50);
      const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      // Running job steps may use agents' tunnels: those stay up until the steps are done.
      await background.stop(Math.max(0, deadline - Date.now()));
      // Upgraded connections (agents' tunnels, relay sessions) keep the server open until they end;
      // the agents reconnect to another replica.
      relay?.close();
      await machines.close();
      await closed;
      clearInterval(sweeper);
      clearTimeout(timer);
      await db.close();
      log.info('agentplane stopped');
    })());
  return { url, db, queue, stop };
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

function listen(app: ReturnType<typeof createApp>['app'], port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host, (err?: Error) => (err ? reject(err) : resolve(server)));
  });
}
