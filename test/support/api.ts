import fs from 'node:fs';
import { createEgressGuard } from '../../src/egress/guard.ts';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { createApp } from '../../src/app.ts';
import type { Role } from '../../src/auth/principal.ts';
import { issueApiKey } from '../../src/auth/issue-api-key.ts';
import { loadConfig } from '../../src/config.ts';
import { openDatabase, type Database } from '../../src/db/client.ts';
import type { ReadRows } from '../../src/db/reads.ts';
import { systemClock, type Clock } from '../../src/lib/clock.ts';
import { startBackground } from '../../src/background.ts';
import type { JobQueue } from '../../src/jobs/queue.ts';
import { newId } from '../../src/lib/ids.ts';
import { startMachineAccess, type MachineAccess } from '../../src/modules/computers/machine-access.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createProvisioner } from '../../src/provisioning/provisioner.ts';
import { attachRelay } from '../../src/relay/upgrade.ts';
import { relayUrls } from '../../src/relay/urls.ts';
import { createEventHub } from '../../src/modules/events/hub.ts';
import { listenOnFreePort } from './http.ts';
import { openTestDatabase, type Backend } from './test-db.ts';

export const JWT_SECRET = 'test-api-secret-test-api-secret-123456';
export const ROLES: Role[] = ['owner', 'manager', 'user', 'guest'];
export type CredentialKind = 'apiKey' | 'jwt';

export interface Member {
  userId: string;
  email: string;
  role: Role;
  apiKey: string;
  jwt: string;
}

export interface OrgFixture {
  id: string;
  members: Record<Role, Member>;
  serviceAccount: { id: string; apiKey: string };
}

async function signJwt(sub: string, email: string, orgId: string): Promise<string> {
  return new SignJWT({ email, org_id: orgId })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(JWT_SECRET));
}

/**
 * An organization with one active member of every role (each with an API key and a JWT) and an
 * active service account with a key.
 */
export async function createOrgFixture(db: Awaited<ReturnType<typeof openTestDatabase>>, name: string): Promise<OrgFixture> {
  const now = new Date();
  const org = await db.prisma.organization.create({ data: { id: newId('org'), name } });
  const members = {} as Record<Role, Member>;
  for (const role of ROLES) {
    const email = `${role}@${name}.test`;
    const sub = `idp|${name}-${role}`;
    const user = await db.prisma.user.create({
      data: { id: newId('usr'), email, idpUserId: sub, firstName: role, lastName: name },
    });
    await db.prisma.membership.create({
      data: { id: newId('mem'), organizationId: org.id, userId: user.id, role, status: 'active' },
    });
    const key = await issueApiKey(db.prisma, { organizationId: org.id, owner: { userId: user.id }, name: 'personal', now });
    members[role] = { userId: user.id, email, role, apiKey: key.value, jwt: await signJwt(sub, email, org.id) };
  }
  const sa = await db.prisma.serviceAccount.create({
    data: { id: newId('sa'), organizationId: org.id, name: `${name}-robot`, createdBy: members.owner.userId },
  });
  const saKey = await issueApiKey(db.prisma, { organizationId: org.id, owner: { serviceAccountId: sa.id }, name: 'robot', now });
  return { id: org.id, members, serviceAccount: { id: sa.id, apiKey: saKey.value } };
}

/**
 * The egress setting of test servers whose fake forges, git servers and model servers listen on
 * loopback, which the egress guard refuses unless the operator allows it.
 */
export const ALLOW_LOOPBACK = { AGENTPLANE_EGRESS_ALLOW: '127.0.0.0/8' };

export interface TestApi {
  url: string;
  /** The server's AGENTPLANE_DATA_DIR (removed on close). */
  dataDir: string;
  db: Awaited<ReturnType<typeof openTestDatabase>>;
  queue: JobQueue;
  machines: MachineAccess;
  /** Two organizations, so tests can prove one never sees the other's resources. */
  acme: OrgFixture;
  globex: OrgFixture;
  /** fetch with JSON in and out, as the given bearer credential. */
  call(method: string, path: string, opts?: { as?: string; body?: unknown; rawBody?: string }): Promise<{ status: number; body: any; headers: Headers }>;
  /** Another server on the same PostgreSQL database, as a second replica: its own pool, caches and port. */
  replica(): Promise<{ url: string; close(): Promise<void> }>;
  close(): Promise<void>;
}

export interface TestApiOptions {
  clock?: Clock;
  /** Run background jobs in this process (default: jobs are only queued). */
  worker?: boolean;
  /** Take agents' tunnels and people's relay sessions (WebSocket upgrades on the API port). */
  gateway?: boolean;
  /** Also open the separate SSH gateway port (a free one) for agents. */
  sshGatewayPort?: boolean;
  /** Configuration variables on top of the defaults (the local provider is off unless enabled here). */
  env?: Record<string, string>;
  /** Wraps the hot reads the app runs (`Database.reads`), e.g. to count them. */
  wrapReads?: (reads: ReadRows) => ReadRows;
}

/**
 * The real app on a real database of the given kind, listening on a free loopback port, with a
 * real job queue (working it only when asked) and the real SSH client.
 */
export async function startTestApi(backend: Backend, opts: TestApiOptions = {}): Promise<TestApi> {
  const db = await openTestDatabase(backend);
  const log = createLogger({ level: 'silent' });
  const clock = opts.clock ?? systemClock;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-api-'));
  const machines = await startMachineAccess(
    { dataDir, host: '127.0.0.1', holdsTunnels: opts.gateway, sshGateway: opts.sshGatewayPort ? { port: 0 } : undefined },
    db.prisma,
    log,
  );
  const config = loadConfig({ AGENTPLANE_JWT_SECRET: JWT_SECRET, AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_LOCAL_PROVIDER: 'false', ...opts.env });
  // Local computers reach the API's port alone: the one this server listens on, once it does.
  let listening: string | undefined;
  const provisioner = createProvisioner(config, machines.secrets, () => Number(listening ? new URL(listening).port : 0));
  const egress = createEgressGuard(config.egress);
  // Tests drive scheduled jobs themselves: no cron schedules here.
  const background = await startBackground({
    db,
    config,
    log,
    clock,
    machines,
    provisioner,
    egress,
    work: opts.worker ?? false,
    schedules: false,
    queue: { maintenanceIntervalSeconds: 1, pollingIntervalSeconds: 0.5 },
  });
  const { queue } = background;
  const urls = relayUrls(() => listening);
  const serve = async (database: Database) => {
    const eventHub = createEventHub({ db: database.prisma, listen: database.listen, log });
    await eventHub.start();
    const { app, relay } = createApp({
      config,
      prisma: database.prisma,
      reads: opts.wrapReads ? opts.wrapReads(database.reads) : database.reads,
      authEpoch: database.authEpoch,
      log,
      clock,
      providers: provisioner.providers,
      queue,
      machines,
      relayUrls: urls,
      pendingMigrations: async () => [],
      egress,
      eventHub,
    });
    const served = await listenOnFreePort(app);
    if (relay) attachRelay(served.server, relay.endpoints, log);
    listening ??= served.url;
    return {
      url: served.url,
      close: async () => {
        relay?.close();
        // Streams never end by themselves; the hub ends them so the server can close.
        await eventHub.close();
        await served.close();
      },
    };
  };
  const server = await serve(db);
  const [acme, globex] = [await createOrgFixture(db, 'acme'), await createOrgFixture(db, 'globex')];
  return {
    url: server.url,
    dataDir,
    db,
    queue,
    machines,
    acme,
    globex,
    call: async (method, path, o = {}) => {
      const headers: Record<string, string> = {};
      if (o.as) headers.authorization = `Bearer ${o.as}`;
      let body: string | undefined = o.rawBody;
      if (o.body !== undefined) body = JSON.stringify(o.body);
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${server.url}${path}`, { method, headers, body });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
    },
    replica: async () => {
      if (db.kind !== 'postgres') throw new Error('only a PostgreSQL database is shared by replicas');
      const other = await openDatabase({ databaseUrl: db.url, dataDir });
      const replica = await serve(other);
      return {
        url: replica.url,
        close: async () => {
          await replica.close();
          await other.close();
        },
      };
    },
    close: async () => {
      await background.stop(5_000);
      await machines.close();
      await server.close();
      await db.dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
