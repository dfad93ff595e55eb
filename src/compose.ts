import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.ts';
import { createBackground, type Background, type BackgroundOptions } from './background.ts';
import type { Config } from './config.ts';
import type { Database } from './db/client.ts';
import { listPendingMigrations } from './db/migrations.ts';
import type { ReadRows } from './db/reads.ts';
import { createEgressGuard, type EgressGuard } from './egress/guard.ts';
import type { JobQueue } from './jobs/queue.ts';
import { systemClock, type Clock } from './lib/clock.ts';
import type { Logger } from './lib/logger.ts';
import { observability } from './observability/start.ts';
import { startMachineAccess, type MachineAccess } from './modules/computers/machine-access.ts';
import { createEventHub, type EventHub } from './modules/events/hub.ts';
import { controlPlaneClone } from './modules/integrations/control-plane-clone.ts';
import { syncGitIntegrations } from './modules/integrations/seed.ts';
import { sealStoredCustomModelKeys } from './modules/organization/enterprise-controls.ts';
import { createProvisioner, type Provisioner } from './provisioning/provisioner.ts';
import type { ProviderRegistry } from './provisioning/providers/registry.ts';
import { requestOrigin } from './http/request-origin.ts';
import { attachRelay } from './relay/upgrade.ts';
import { relayUrls, type RelayUrls } from './relay/urls.ts';

export interface ComposeOptions {
  config: Config;
  /** Open and migrated; the caller closes it after `stop`. */
  db: Database;
  log: Logger;
  /** What the caller gives instead of what `config` would make: tests' clocks, a second replica sharing the first one's parts. */
  overrides?: ComposeOverrides;
}

interface ComposeOverrides {
  clock?: Clock;
  /** Whether this process takes agents' tunnels (default: a server does, a worker never). */
  holdsTunnels?: boolean;
  /** Machine access started elsewhere; `stop` leaves it running. */
  machines?: MachineAccess;
  /** The providers the API reports (benches of the HTTP layer give none, so no prerequisite check runs per request). */
  providers?: ProviderRegistry;
  /** Send jobs through this queue (another's, or none at all) instead of starting this process's own. */
  queue?: Pick<JobQueue, 'send'>;
  /** Whether this process works jobs (default: `config.runWorker` for a server, always for a worker). */
  work?: boolean;
  /** Register the cron schedules and send their start-up runs (default true; tests that drive jobs themselves leave them out). */
  schedules?: boolean;
  /** Queue timings (tests shorten them). */
  queueTimings?: BackgroundOptions['queue'];
  /** Wraps the hot reads the app runs (`Database.reads`), e.g. to count them. */
  wrapReads?: (reads: ReadRows) => ReadRows;
  pendingMigrations?: () => Promise<string[]>;
  /** Another replica's addresses, when this one serves beside it in the same process. */
  relayUrls?: RelayUrls;
}

/** A standalone worker: the background work and what it needs. */
export interface ComposedWorker {
  clock: Clock;
  machines: MachineAccess;
  provisioner: Provisioner;
  egress: EgressGuard;
  /** This process's own queue, absent when `overrides.queue` sends through another. */
  background?: Background;
  queue: Pick<JobQueue, 'send'>;
  /**
   * Starts what runs by itself: the queue (and the worker, when it works jobs); a server first
   * seeds configured git integrations and seals legacy stored keys, and starts its event hub.
   */
  start(): Promise<void>;
  /**
   * Graceful: stops taking requests (when it listens), ends event streams, lets running job steps
   * finish (bounded by `timeoutMs`, default the configured shutdown timeout), then closes what it
   * started. The database stays open for the caller.
   */
  stop(timeoutMs?: number): Promise<void>;
}

/** A control-plane server: the worker's parts and the API, its event hub and relay. */
export interface ControlPlane extends ComposedWorker {
  app: ReturnType<typeof createApp>['app'];
  routes: ReturnType<typeof createApp>['routes'];
  relay: ReturnType<typeof createApp>['relay'];
  hub: EventHub;
  relayUrls: RelayUrls;
  /** Serves the API and the relay's WebSocket endpoints on `port` (0: a free one) and `host`. */
  listen(port: number, host: string): Promise<{ url: string; server: Server }>;
}

/**
 * The composition root: builds the control plane from configuration the same way for `serve`,
 * `agentplane worker`, the test servers and the benches, so a test starts what the README starts.
 * Machine access is started here (the app needs its keys); the rest starts with `start`.
 */
export async function compose(opts: ComposeOptions & { role: 'worker' }): Promise<ComposedWorker>;
export async function compose(opts: ComposeOptions & { role?: 'server' }): Promise<ControlPlane>;
export async function compose(opts: ComposeOptions & { role?: 'server' | 'worker' }): Promise<ComposedWorker | ControlPlane> {
  const { config, db, log, overrides: o = {} } = opts;
  const serves = opts.role !== 'worker';
  const clock = o.clock ?? systemClock;
  // A worker holds no agent tunnels; with PostgreSQL it reaches them through the replicas that do.
  const machines = o.machines ?? (await startMachineAccess({ ...config, holdsTunnels: o.holdsTunnels ?? serves }, db.prisma, log));
  // Local computers reach the API's port alone: the one this process listens on, once it does (PORT=0 picks one).
  let boundPort: number | undefined;
  const egress = createEgressGuard(config.egress);
  const provisioner = createProvisioner(
    config,
    machines.secrets,
    () => boundPort ?? config.port,
    (organizationId, repository) => controlPlaneClone({ db: db.prisma, secrets: machines.secrets, egress }, organizationId, repository),
  );
  // Every replica sends jobs and registers the schedules; with AGENTPLANE_WORKER=false it leaves
  // running them to `agentplane worker`. The analytics roll-up catches up on days missed while stopped.
  const background = o.queue
    ? undefined
    : createBackground({
        db,
        config,
        log,
        clock,
        machines,
        provisioner,
        egress,
        work: o.work ?? (serves ? config.runWorker : true),
        schedules: o.schedules,
        queue: o.queueTimings,
      });
  const queue = o.queue ?? background!.queue;
  const observed = observability({ config, db, queue: background?.queue, log });
  const worker: ComposedWorker = {
    clock,
    machines,
    provisioner,
    egress,
    background,
    queue,
    start: async () => {
      await observed.start();
      await background?.start();
    },
    stop: async (timeoutMs = config.shutdownTimeoutMs) => {
      await background?.stop(timeoutMs);
      if (!o.machines) await machines.close();
      await observed.stop();
    },
  };
  if (!serves) return worker;

  const hub = createEventHub({ db: db.prisma, listen: db.listen, log });
  // The address a caller reached: AGENTPLANE_PUBLIC_URL, else the request's own (a load balancer's, so an
  // agent's tunnel can land on any replica), else, away from requests, the server's once it listens.
  let listening: string | undefined;
  const publicUrl = () => config.relay.publicUrl ?? requestOrigin() ?? listening;
  const urls = o.relayUrls ?? relayUrls(publicUrl);
  const { app, routes, relay } = createApp({
    config,
    prisma: db.prisma,
    reads: o.wrapReads ? o.wrapReads(db.reads) : db.reads,
    authEpoch: db.authEpoch,
    log,
    clock,
    providers: o.providers ?? provisioner.providers,
    queue,
    machines,
    relayUrls: urls,
    publicUrl,
    pendingMigrations: o.pendingMigrations ?? (() => listPendingMigrations(db)),
    egress,
    eventHub: hub,
  });
  let server: Server | undefined;
  let stopping: Promise<void> | undefined;
  return {
    ...worker,
    app,
    routes,
    relay,
    hub,
    relayUrls: urls,
    start: async () => {
      // Stored secrets are in shape before any job reads them.
      await syncGitIntegrations(db.prisma, machines.secrets, config.gitIntegrations);
      await sealStoredCustomModelKeys({ db: db.prisma, secrets: machines.secrets });
      await worker.start();
      await hub.start();
    },
    listen: async (port, host) => {
      server = await new Promise<Server>((resolve, reject) => {
        const s = app.listen(port, host, (err?: Error) => (err ? reject(err) : resolve(s)));
      });
      if (relay) attachRelay(server, relay.endpoints, log);
      const address = server.address() as AddressInfo;
      const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}`;
      boundPort ??= address.port;
      listening ??= url;
      return { url, server };
    },
    stop: (timeoutMs = config.shutdownTimeoutMs) =>
      (stopping ??= (async () => {
        const deadline = Date.now() + timeoutMs;
        const open = server;
        const closed = open && new Promise<void>((resolve) => open.close(() => resolve()));
        // Event streams never end by themselves: end them, and clients reconnect to another replica.
        await hub.close();
        // Keep-alive connections turn idle as their last response ends; close each as it does.
        const sweeper = open && setInterval(() => open.closeIdleConnections(), 50);
        const timer = open && setTimeout(() => open.closeAllConnections(), timeoutMs);
        // Running job steps may use agents' tunnels: those stay up until the steps are done.
        await background?.stop(Math.max(0, deadline - Date.now()));
        // Upgraded connections (agents' tunnels, relay sessions) keep the server open until they end;
        // the agents reconnect to another replica.
        relay?.close();
        if (!o.machines) await machines.close();
        await observed.stop();
        await closed;
        clearInterval(sweeper);
        clearTimeout(timer);
      })()),
  };
}
