import path from 'node:path';
import express from 'express';
import { createAuthenticator } from './auth/authenticate.ts';
import { createJwtVerifier } from './auth/jwt.ts';
import type { Config } from './config.ts';
import type { PrismaClient } from './db/client.ts';
import type { AuthEpoch } from './db/auth-epoch.ts';
import type { EgressGuard } from './egress/guard.ts';
import type { ReadRows } from './db/reads.ts';
import { serveConsole } from './console/serve.ts';
import { accessLog } from './http/access-log.ts';
import { rememberRequestOrigin } from './http/request-origin.ts';
import { errorHandler, notFound } from './http/error-handler.ts';
import { buildOpenApiDocument } from './http/openapi.ts';
import { requestId } from './http/request-id.ts';
import { observeRequests } from './observability/http.ts';
import { mountRoute, type RouteSpec } from './http/route.ts';
import type { Clock } from './lib/clock.ts';
import type { Logger } from './lib/logger.ts';
import { analyticsRoutes } from './modules/analytics/routes.ts';
import { createAnalyticsService } from './modules/analytics/service.ts';
import { templateRoutes } from './modules/computer-templates/routes.ts';
import { computerRoutes } from './modules/computers/routes.ts';
import { organizationRoutes } from './modules/organization/routes.ts';
import { serviceAccountRoutes } from './modules/service-accounts/routes.ts';
import { systemRoutes } from './modules/system/routes.ts';
import { createSystemService } from './modules/system/service.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { SecretBox } from './lib/secret-box.ts';
import { computerTargets, type AgentDialer } from './modules/computers/machines.ts';
import { modelRoutes } from './modules/models/routes.ts';
import { createModelsService } from './modules/models/service.ts';
import { sessionRoutes } from './modules/sessions/routes.ts';
import { createSessionsService } from './modules/sessions/service.ts';
import { automationRoutes } from './modules/automations/routes.ts';
import { createAutomationsService } from './modules/automations/service.ts';
import { integrationRoutes } from './modules/integrations/routes.ts';
import { eventRoutes } from './modules/events/routes.ts';
import { createEventsService } from './modules/events/service.ts';
import type { EventHub } from './modules/events/hub.ts';
import { readinessRoutes } from './modules/readiness/routes.ts';
import { webhookRoutes } from './modules/webhooks/routes.ts';
import { createReadinessService } from './modules/readiness/service.ts';
import { wikiRoutes } from './modules/wiki/routes.ts';
import { createWikiService } from './modules/wiki/service.ts';
import { configRoutes } from './modules/config/routes.ts';
import { createConfigService } from './modules/config/service.ts';
import { serviceFactories } from './service-factories.ts';
import { dataDirectoryVideoStorage } from './modules/wiki/video/data-directory.ts';
import { s3VideoStorage } from './modules/wiki/video/s3.ts';
import type { ProviderRegistry } from './provisioning/providers/registry.ts';
import type { SshGateway } from './relay/gateway/index.ts';
import { webSocketDuplex } from './relay/gateway/websocket-stream.ts';
import type { SshClient } from './ssh/index.ts';
import { createClientRelay } from './relay/client-relay.ts';
import type { RelayEndpoints } from './relay/upgrade.ts';
import { publicBaseUrl, type RelayUrls } from './relay/urls.ts';
import { RETURN_TOKEN_HEADER } from './relay/protocol.ts';
import type { ReplicaRelay } from './relay/replica-relay.ts';
import { AppError } from './lib/errors.ts';

export interface AppDeps {
  config: Pick<Config, 'bodyLimit' | 'jwt' | 'sessionsOrgs' | 'appUrl' | 'sessions' | 'managed' | 'events' | 'dataDir' | 'wiki' | 'trustProxy'>;
  prisma: PrismaClient;
  /** Prepared reads on the same database (`Database.reads`): the credential lookup on every request. */
  reads: ReadRows;
  /** The credential-change counter (`Database.authEpoch`), the fence of the fenced caches (src/db/fenced-cache.ts). */
  authEpoch: AuthEpoch;
  log: Logger;
  clock: Clock;
  providers: ProviderRegistry;
  /** Sends background jobs; the worker may run elsewhere. */
  queue: Pick<JobQueue, 'send'>;
  /** How the control plane reaches machines; `relay` where this process takes agents' tunnels. */
  machines: {
    ssh: SshClient;
    secrets: SecretBox;
    gateway?: AgentDialer;
    relay?: { gateway: Pick<SshGateway, 'accept'>; hostKey: string; acceptReturn: ReplicaRelay['acceptReturn'] };
  };
  /** The relay's public addresses, reported on computers. */
  relayUrls?: RelayUrls;
  /** The address callers reach the API at (the request's own, AGENTPLANE_PUBLIC_URL, or the listening address). */
  publicUrl: () => string | undefined;
  pendingMigrations: () => Promise<string[]>;
  /** Outbound requests made on a tenant's behalf (URLs checked at request time). */
  egress: EgressGuard;
  /** This process's listener on stored and transient events, which event streams subscribe to. */
  eventHub: EventHub;
}

/**
 * Assembles the Express app: every module's routes, one auth path, one error handler; and, where
 * the process takes agents' tunnels, the relay's WebSocket endpoints for the same server.
 */
export function createApp(deps: AppDeps) {
  const authenticate = createAuthenticator({
    db: deps.prisma,
    clock: deps.clock,
    reads: deps.reads,
    verifyJwt: createJwtVerifier(deps.config.jwt),
  });
  const routes: RouteSpec[] = [];
  const resolveComputerTarget = computerTargets({ db: deps.prisma, ...deps.machines });
  // Videos: object storage when configured (needed by several replicas), else the data directory.
  const s3 = deps.config.wiki.s3;
  const dataDirectoryVideos = s3
    ? undefined
    : dataDirectoryVideoStorage({
        dir: path.join(deps.config.dataDir, 'wiki-videos'),
        signingKey: deps.machines.secrets.derive('wiki video uploads'),
        baseUrl: deps.publicUrl,
      });
  let document: unknown;
  const openApiDocument = () => (document ??= buildOpenApiDocument(routes));
  const wiki = createWikiService({
    db: deps.prisma,
    clock: deps.clock,
    queue: deps.queue,
    resolveComputerTarget,
    egress: deps.egress,
    video: dataDirectoryVideos ?? s3VideoStorage(s3!),
    videoMaxBytes: deps.config.wiki.videoMaxBytes,
  });
  // The services other code changes things through, built on a client: the app's, or a config apply's transaction.
  const on = serviceFactories({
    clock: deps.clock,
    queue: deps.queue,
    providers: deps.providers,
    managed: deps.config.managed,
    relayUrls: deps.relayUrls,
    machines: deps.machines,
    reads: deps.reads,
    egress: deps.egress,
    log: deps.log,
    turnLimits: deps.config.sessions.turnLimits,
  });
  routes.push(
    ...systemRoutes(createSystemService({ db: deps.prisma, pendingMigrations: deps.pendingMigrations }), openApiDocument),
    ...computerRoutes(on.computers(deps.prisma)),
    ...serviceAccountRoutes(on.serviceAccounts(deps.prisma)),
    ...templateRoutes(on.templates(deps.prisma)),
    ...organizationRoutes(on.organization(deps.prisma)),
    ...analyticsRoutes(createAnalyticsService({ db: deps.prisma, clock: deps.clock })),
    ...readinessRoutes(
      createReadinessService({
        db: deps.prisma,
        clock: deps.clock,
        queue: deps.queue,
        resolveComputerTarget,
        egress: deps.egress,
      }),
      { appUrl: deps.config.appUrl },
    ),
    ...integrationRoutes(on.integrations(deps.prisma)),
    ...automationRoutes(
      createAutomationsService({ db: deps.prisma, clock: deps.clock, secrets: deps.machines.secrets, egress: deps.egress, wiki: { createRun: wiki.create } }),
    ),
    ...wikiRoutes(wiki, { dataDirectoryVideos, clock: deps.clock, uploadLimit: deps.config.wiki.uploadLimit }),
    ...sessionRoutes(
      createSessionsService({
        db: deps.prisma,
        clock: deps.clock,
        queue: deps.queue,
        machines: { db: deps.prisma, ...deps.machines },
        limits: deps.config.sessions,
        defaultModel: deps.config.sessions.defaultModel,
      }),
      { sessionsOrgs: deps.config.sessionsOrgs },
    ),
    ...modelRoutes(createModelsService({ db: deps.prisma, defaultModel: deps.config.sessions.defaultModel })),
    ...webhookRoutes(on.webhooks(deps.prisma)),
    ...configRoutes(
      createConfigService({
        db: deps.prisma,
        clock: deps.clock,
        secrets: deps.machines.secrets,
        providers: deps.providers,
        operations: on.configOperations,
        queue: deps.queue,
        publicUrl: () => publicBaseUrl(deps.relayUrls),
      }),
    ),
    ...eventRoutes(createEventsService({ db: deps.prisma, hub: deps.eventHub, settings: deps.config.events }), {
      sessionsOrgs: deps.config.sessionsOrgs,
    }),
  );

  const app = express();
  app.disable('x-powered-by');
  // API responses are not cached by validators; hashing every body for an ETag costs ~40 ms on large analytics answers.
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', deps.config.trustProxy);
  app.use(observeRequests(), requestId, accessLog(deps.log), rememberRequestOrigin);
  const router = express.Router();
  for (const route of routes)
    mountRoute(router, route, { authenticate, authEpoch: deps.authEpoch, eventStreams: deps.config.events, bodyLimit: deps.config.bodyLimit });
  // The web console after the API: an API path always wins, and what neither serves is the API's 404.
  // A body no route took is still read (the server's limit), so a malformed or oversized one is answered as such.
  app.use(router, express.json({ limit: deps.config.bodyLimit }), serveConsole(), notFound, errorHandler);
  return { app, routes, relay: relayEndpoints(deps, authenticate) };
}

function relayEndpoints(deps: AppDeps, authenticate: ReturnType<typeof createAuthenticator>): { endpoints: RelayEndpoints; close(): void } | undefined {
  const agents = deps.machines.relay;
  if (!agents) return undefined;
  const people = createClientRelay({
    db: deps.prisma,
    authenticate,
    authEpoch: deps.authEpoch,
    machines: { db: deps.prisma, ...deps.machines },
    hostKey: agents.hostKey,
    clock: deps.clock,
    log: deps.log,
  });
  return {
    endpoints: {
      agent: (ws, remote) => agents.gateway.accept(webSocketDuplex(ws), remote),
      agentReturn: async (req) => {
        const token = req.headers[RETURN_TOKEN_HEADER];
        const accepted = typeof token === 'string' ? await agents.acceptReturn(token) : undefined;
        if (!accepted) throw new AppError(404, 'No relay session waits for this connection back (it may have stopped waiting)');
        return { serve: accepted.serve, cancel: accepted.cancel };
      },
      client: (req, computerId) => people.open(req, computerId),
    },
    close: () => people.close(),
  };
}
