import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import type { Role } from '../../src/auth/principal.ts';
import { issueApiKey } from '../../src/auth/issue-api-key.ts';
import { compose } from '../../src/compose.ts';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/client.ts';
import type { Clock } from '../../src/lib/clock.ts';
import type { MachineAccess } from '../../src/modules/computers/machine-access.ts';
import type { ReadRows } from '../../src/db/reads.ts';
import type { JobQueue } from '../../src/jobs/queue.ts';
import { newId } from '../../src/lib/ids.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { openTestDatabase, type Backend } from './test-db.ts';

export const JWT_SECRET = 'test-api-secret-test-api-secret-123456';
export const ROLES: Role[] = ['owner', 'manager', 'user', 'guest'];

interface Member {
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
 * active service account with a key: written in one transaction (one commit instead of 19, which
 * counts on PGlite).
 */
export async function createOrgFixture(db: Awaited<ReturnType<typeof openTestDatabase>>, name: string): Promise<OrgFixture> {
  const now = new Date();
  return db.prisma.$transaction(
    async (tx) => {
      const org = await tx.organization.create({ data: { id: newId('org'), name } });
      const members = {} as Record<Role, Member>;
      for (const role of ROLES) {
        const email = `${role}@${name}.test`;
        const sub = `idp|${name}-${role}`;
        const user = await tx.user.create({
          data: { id: newId('usr'), email, idpUserId: sub, firstName: role, lastName: name },
        });
        await tx.membership.create({
          data: { id: newId('mem'), organizationId: org.id, userId: user.id, role, status: 'active' },
        });
        const key = await issueApiKey(tx, { organizationId: org.id, owner: { userId: user.id }, name: 'personal', now });
        members[role] = { userId: user.id, email, role, apiKey: key.value, jwt: await signJwt(sub, email, org.id) };
      }
      const sa = await tx.serviceAccount.create({
        data: { id: newId('sa'), organizationId: org.id, name: `${name}-robot`, createdBy: members.owner.userId },
      });
      const saKey = await issueApiKey(tx, { organizationId: org.id, owner: { serviceAccountId: sa.id }, name: 'robot', now });
      return { id: org.id, members, serviceAccount: { id: sa.id, apiKey: saKey.value } };
    },
    // Prisma's 5 s default is short for a busy 2-core machine.
    { timeout: 60_000, maxWait: 60_000 },
  );
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
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-api-'));
  const config = loadConfig({
    AGENTPLANE_JWT_SECRET: JWT_SECRET,
    AGENTPLANE_DATA_DIR: dataDir,
    AGENTPLANE_HOST: '127.0.0.1',
    AGENTPLANE_LOCAL_PROVIDER: 'false',
    ...(opts.sshGatewayPort ? { AGENTPLANE_SSH_GATEWAY_PORT: '0' } : {}),
    ...opts.env,
  });
  const plane = await compose({
    config,
    db,
    log,
    // Tests drive scheduled jobs themselves: no cron schedules here.
    overrides: {
      clock: opts.clock,
      holdsTunnels: opts.gateway ?? false,
      work: opts.worker ?? false,
      schedules: false,
      queueTimings: { maintenanceIntervalSeconds: 1, pollingIntervalSeconds: 0.5 },
      wrapReads: opts.wrapReads,
    },
  });
  await plane.start();
  const queue = plane.background!.queue;
  const { machines } = plane;
  const server = await plane.listen(0, '127.0.0.1');
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
      const { clock, relayUrls } = plane;
      const replica = await compose({ config, db: other, log, overrides: { clock, machines, queue, relayUrls, wrapReads: opts.wrapReads } });
      await replica.start();
      const { url } = await replica.listen(0, '127.0.0.1');
      return {
        url,
        close: async () => {
          await replica.stop(5_000);
          await other.close();
        },
      };
    },
    close: async () => {
      await plane.stop(5_000);
      await db.dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
