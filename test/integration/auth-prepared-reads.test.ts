import os from 'node:os';
import type { PGlite } from '@electric-sql/pglite';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-keys.ts';
import { createJwtVerifier } from '../../src/auth/jwt.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { requestFence } from '../../src/db/auth-epoch.ts';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { pipelinedReads } from '../../src/db/pg-reads.ts';
import { readsFromPglite } from '../../src/db/pglite-reads.ts';
import { fixedClock } from '../../src/lib/clock.ts';
import { newId } from '../../src/lib/ids.ts';
import { createServiceAccountsService } from '../../src/modules/service-accounts/service.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { createSshClient } from '../../src/ssh/index.ts';
import { requestAuthenticator, type AuthenticateRequest } from '../support/authenticate.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';

// These tests only read service accounts; deleting one (which would queue its computers' teardown) is not among them.
const noComputers = { queue: { send: async () => '' }, managed: loadConfig({}).managed };
/** These tests delete no account that owns machines. */
const noMachines = { ssh: createSshClient(), secrets: createSecretBox(Buffer.alloc(32)) };

/**
 * The credential lookup and the service-account list through the reads the server runs them with
 * (`Database.reads`: prepared statements on the database's own driver). They must see every change
 * at once (the key cache included, see credential-cache.test.ts) and must never read inside another
 * caller's transaction.
 */
const SECRET = 'prepared-reads-secret-prepared-reads-1';
const MINUTE = 60_000;

describe.each(BACKENDS)('credential lookup on %s through prepared reads', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let authenticate: AuthenticateRequest;
  const clock = fixedClock(new Date('2030-01-01T00:00:00Z'));
  let orgId: string;
  let userId: string;
  let membershipId: string;

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    authenticate = requestAuthenticator({ db: db.prisma, clock, reads: db.reads, authEpoch: db.authEpoch, verifyJwt: createJwtVerifier({ secret: SECRET }) });
    orgId = (await db.prisma.organization.create({ data: { id: newId('org'), name: 'acme' } })).id;
    userId = (await db.prisma.user.create({ data: { id: newId('usr'), email: 'ann@acme.test', idpUserId: 'idp|ann' } })).id;
    membershipId = (await db.prisma.membership.create({ data: { id: newId('mem'), organizationId: orgId, userId, role: 'manager' } })).id;
  });
  afterAll(() => db?.dispose());

  async function addKey(data: { userId?: string; serviceAccountId?: string; expiresAt?: Date; revokedAt?: Date; validUntil?: Date }) {
    const key = generateApiKey();
    const row = await db.prisma.apiKey.create({
      data: { id: newId('key'), organizationId: orgId, name: 'k', secretHash: key.secretHash, fingerprint: key.fingerprint, ...data },
    });
    return { id: row.id, header: `Bearer ${key.value}` };
  }

  const rejected = (header: string, detail: RegExp) =>
    expect(authenticate(header)).rejects.toMatchObject({ status: 401, message: expect.stringMatching(detail) });

  it('turns a member key into the member with the role of the key organization', async () => {
    const key = await addKey({ userId });
    await expect(authenticate(key.header)).resolves.toEqual({
      organizationId: orgId,
      credential: 'api_key',
      apiKeyId: key.id,
      kind: 'user',
      userId,
      email: 'ann@acme.test',
      role: 'manager',
    } satisfies Principal);
    await rejected(`Bearer ${generateApiKey().value}`, /not valid/);
  });

  it('sees revocation, role and membership changes on the very next request', async () => {
    const key = await addKey({ userId });
    await db.prisma.membership.update({ where: { id: membershipId }, data: { role: 'owner' } });
    await expect(authenticate(key.header)).resolves.toMatchObject({ role: 'owner' });
    await db.prisma.membership.update({ where: { id: membershipId }, data: { status: 'invited' } });
    await rejected(key.header, /no longer an active member/);
    await db.prisma.membership.update({ where: { id: membershipId }, data: { status: 'active', role: 'manager' } });
    await expect(authenticate(key.header)).resolves.toMatchObject({ role: 'manager' });
    await db.prisma.apiKey.update({ where: { id: key.id }, data: { revokedAt: clock.now() } });
    await rejected(key.header, /revoked/);
  });

  it('checks expiry and the rotation grace window against the clock on every request', async () => {
    const expiring = await addKey({ userId, expiresAt: new Date(clock.now().getTime() + MINUTE) });
    const rotated = await addKey({ userId, revokedAt: clock.now(), validUntil: new Date(clock.now().getTime() + MINUTE) });
    await expect(authenticate(expiring.header)).resolves.toMatchObject({ kind: 'user' });
    await expect(authenticate(rotated.header)).resolves.toMatchObject({ kind: 'user' });
    clock.advance(MINUTE);
    await rejected(expiring.header, /expired/);
    await rejected(rotated.header, /revoked/);
  });

  it('turns a service account key into the account while it is active', async () => {
    const sa = await db.prisma.serviceAccount.create({
      data: { id: newId('sa'), organizationId: orgId, name: 'robot', createdBy: userId },
    });
    const key = await addKey({ serviceAccountId: sa.id });
    await expect(authenticate(key.header)).resolves.toEqual({
      organizationId: orgId,
      credential: 'api_key',
      apiKeyId: key.id,
      kind: 'service_account',
      serviceAccountId: sa.id,
      role: 'user',
    } satisfies Principal);
    await db.prisma.serviceAccount.update({ where: { id: sa.id }, data: { status: 'inactive' } });
    await rejected(key.header, /service account behind this API key is inactive/);
    await db.prisma.serviceAccount.update({ where: { id: sa.id }, data: { status: 'deleted' } });
    await rejected(key.header, /is deleted/);
  });

  it('refuses a key whose owner left the organization', async () => {
    const other = await db.prisma.user.create({ data: { id: newId('usr'), email: 'gone@acme.test' } });
    const key = await addKey({ userId: other.id });
    await rejected(key.header, /no longer an active member/);
  });

  it('turns a JWT of a known identity into the member, and refuses one without an active membership', async () => {
    const token = (orgClaim: string) =>
      new SignJWT({ org_id: orgClaim })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('idp|ann')
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(SECRET));
    // The fixed clock is years ahead of the token's real-time expiry check; only sign-in times use it.
    await expect(authenticate(`Bearer ${await token(orgId)}`)).resolves.toEqual({
      organizationId: orgId,
      credential: 'jwt',
      kind: 'user',
      userId,
      email: 'ann@acme.test',
      role: 'manager',
    } satisfies Principal);
    const stored = await db.prisma.user.findUniqueOrThrow({ where: { id: userId } });
    expect(stored.lastSignInAt).toEqual(clock.now());
    await expect(authenticate(`Bearer ${await token('org_elsewhere')}`)).rejects.toMatchObject({ status: 401 });
  });

  it('lists accounts newest first without deleted ones, an empty list, and 402 for an unknown organization', async () => {
    const service = createServiceAccountsService({
      db: db.prisma,
      clock,
      reads: db.reads,
      computers: noComputers,
      machines: noMachines,
      log: createLogger({ level: 'silent' }),
    });
    const empty = (await db.prisma.organization.create({ data: { id: newId('org'), name: 'empty' } })).id;
    const principal = (organizationId: string): Principal => ({
      organizationId,
      credential: 'api_key',
      kind: 'user',
      userId,
      email: 'ann@acme.test',
      role: 'owner',
    });
    const list = async (organizationId: string) =>
      (JSON.parse((await service.list(principal(organizationId), requestFence(db.authEpoch))).text) as { serviceAccounts: unknown[] }).serviceAccounts;
    await expect(list(empty)).resolves.toEqual([]);
    await expect(list('org_missing')).rejects.toMatchObject({ status: 402 });

    const at = (minutes: number) => new Date(clock.now().getTime() + minutes * MINUTE);
    await db.prisma.serviceAccount.createMany({
      data: [
        { id: 'sa_a', organizationId: empty, name: 'old', createdBy: userId, createdAt: at(1), updatedAt: at(5), teamIds: ['t1'] },
        { id: 'sa_b', organizationId: empty, name: 'new', createdBy: userId, createdAt: at(2), updatedAt: at(2), description: 'd' },
        { id: 'sa_c', organizationId: empty, name: 'tie', createdBy: userId, createdAt: at(2), updatedAt: at(2), status: 'inactive' },
        { id: 'sa_d', organizationId: empty, name: 'gone', createdBy: userId, createdAt: at(3), updatedAt: at(3), status: 'deleted' },
      ],
    });
    const listed = await list(empty);
    expect(listed).toEqual([
      { id: 'sa_c', name: 'tie', status: 'inactive', createdBy: userId, teamIds: [], createdAt: at(2).getTime(), updatedAt: at(2).getTime() },
      { id: 'sa_b', name: 'new', description: 'd', status: 'active', createdBy: userId, teamIds: [], createdAt: at(2).getTime(), updatedAt: at(2).getTime() },
      { id: 'sa_a', name: 'old', status: 'active', createdBy: userId, teamIds: ['t1'], createdAt: at(1).getTime(), updatedAt: at(5).getTime() },
    ]);
    await db.prisma.organization.update({ where: { id: empty }, data: { entitlements: { serviceAccounts: false } } });
    await expect(list(empty)).rejects.toMatchObject({ status: 402 });
  });
});

describe.runIf(BACKENDS.includes('postgres'))('prepared reads on two replicas of one PostgreSQL database', () => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let replicaB: Database | undefined;
  afterAll(async () => {
    await replicaB?.close();
    await db?.dispose();
  });

  it('refuses a key on replica B at once after replica A revoked it', async () => {
    db = await openTestDatabase('postgres');
    if (db.kind !== 'postgres') throw new Error('expected a PostgreSQL database');
    const clock = fixedClock(new Date());
    // Each replica opens the database as a server does: its own pool, its own prepared statements.
    replicaB = await openDatabase({ databaseUrl: db.url, dataDir: os.tmpdir() });
    const [a, b] = [db, replicaB].map((replica) => requestAuthenticator({ db: replica.prisma, clock, reads: replica.reads, authEpoch: replica.authEpoch }));
    const orgId = (await db.prisma.organization.create({ data: { id: newId('org'), name: 'acme' } })).id;
    const sa = await db.prisma.serviceAccount.create({ data: { id: newId('sa'), organizationId: orgId, name: 'ci', createdBy: 'test' } });
    const key = generateApiKey();
    const stored = await db.prisma.apiKey.create({
      data: { id: newId('key'), organizationId: orgId, serviceAccountId: sa.id, name: 'k', secretHash: key.secretHash, fingerprint: key.fingerprint },
    });
    // Both replicas have prepared the statement and served the key before the revocation.
    await expect(a!(`Bearer ${key.value}`)).resolves.toMatchObject({ serviceAccountId: sa.id });
    await expect(b!(`Bearer ${key.value}`)).resolves.toMatchObject({ serviceAccountId: sa.id });
    const service = createServiceAccountsService({
      db: db.prisma,
      clock,
      reads: db.reads,
      computers: noComputers,
      machines: noMachines,
      log: createLogger({ level: 'silent' }),
    });
    const owner: Principal = { organizationId: orgId, credential: 'api_key', kind: 'user', userId: 'usr_x', email: 'x@acme.test', role: 'owner' };
    await service.revokeKey(owner, sa.id, stored.id);
    await expect(b!(`Bearer ${key.value}`)).rejects.toMatchObject({ status: 401, message: expect.stringMatching(/revoked/) });
  });
});

describe.runIf(BACKENDS.includes('postgres'))('pipelined reads on PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let url: string;
  const double = { name: 'test_pipelined_double', text: 'SELECT $1::int * 2 AS n' };
  const backendPid = { name: 'test_pipelined_pid', text: 'SELECT pg_backend_pid() AS pid' };
  beforeAll(async () => {
    db = await openTestDatabase('postgres');
    if (db.kind !== 'postgres') throw new Error('expected a PostgreSQL database');
    url = db.url;
  });
  afterAll(() => db?.dispose());

  it('answer each of many concurrent reads with its own rows, and fail a bad one alone', async () => {
    const hot = pipelinedReads({ connectionString: url });
    try {
      // Issued in one turn of the event loop: they leave in one write and are answered in a row.
      const inputs = Array.from({ length: 300 }, (_, i) => (i === 150 ? 'not a number' : String(i)));
      const settled = await Promise.allSettled(inputs.map((n) => hot.reads<{ n: number }>(double, [n])));
      settled.forEach((outcome, i) => {
        if (i === 150) expect(outcome).toMatchObject({ status: 'rejected', reason: { code: '22P02' } });
        else expect(outcome).toEqual({ status: 'fulfilled', value: [{ n: 2 * i }] });
      });
      // And again, now that the statement is prepared on the connection.
      await expect(Promise.all([hot.reads(double, ['5']), hot.reads(double, ['6'])])).resolves.toEqual([[{ n: 10 }], [{ n: 12 }]]);
    } finally {
      await hot.close();
    }
  });

  it('replace a connection the server closed, and refuse reads once closed', async () => {
    const hot = pipelinedReads({ connectionString: url });
    const [{ pid }] = (await hot.reads<{ pid: number }>(backendPid, [])) as [{ pid: number }];
    await db.prisma.$queryRawUnsafe('SELECT pg_terminate_backend($1::int)', pid);
    let next: number | undefined;
    for (let attempt = 0; next === undefined && attempt < 50; attempt++) {
      // The read that meets the dead connection fails; the next one opens a new connection.
      next = await hot.reads<{ pid: number }>(backendPid, []).then(
        (rows) => rows[0]!.pid,
        () => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 20)),
      );
    }
    expect(next).toBeDefined();
    expect(next).not.toBe(pid);
    await expect(hot.reads(double, ['2'])).resolves.toEqual([{ n: 4 }]);
    await hot.close();
    await expect(hot.reads(double, ['2'])).rejects.toThrow(/closed/);
  });
});

describe('prepared reads on PGlite', () => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let pglite: PGlite;
  beforeAll(async () => {
    db = await openTestDatabase('pglite');
    if (db.kind !== 'pglite') throw new Error('expected a PGlite database');
    pglite = db.pglite;
  });
  afterAll(() => db?.dispose());

  it('wait for an open transaction to end instead of reading inside it', async () => {
    const reads = readsFromPglite(pglite);
    const count = { name: 'test_org_count', text: 'SELECT count(*)::int AS n FROM organizations WHERE name = $1' };
    let read: Promise<{ n: number }[]> | undefined;
    let settledInside = false;
    await expect(
      db.prisma.$transaction(async (tx) => {
        await tx.organization.create({ data: { id: newId('org'), name: 'uncommitted' } });
        read = reads<{ n: number }>(count, ['uncommitted']);
        void read.then(() => (settledInside = true));
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(settledInside).toBe(false);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await expect(read).resolves.toEqual([{ n: 0 }]);
  });

  it('recover when the first use of a statement fails after it was parsed', async () => {
    const reads = readsFromPglite(pglite);
    const double = { name: 'test_double', text: 'SELECT $1::int * 2 AS n' };
    await expect(reads(double, ['not a number'])).rejects.toThrow(/invalid input syntax/);
    await expect(reads(double, ['21'])).resolves.toEqual([{ n: 42 }]);
    await expect(reads(double, ['4'])).resolves.toEqual([{ n: 8 }]);
  });

  it('prepare again after the session dropped its statements, and share statements between readers', async () => {
    const [first, second] = [readsFromPglite(pglite), readsFromPglite(pglite)];
    const triple = { name: 'test_triple', text: 'SELECT $1::int * 3 AS n' };
    await expect(first(triple, ['1'])).resolves.toEqual([{ n: 3 }]);
    await expect(second(triple, ['2'])).resolves.toEqual([{ n: 6 }]);
    await expect(first(triple, ['3'])).resolves.toEqual([{ n: 9 }]);
    await pglite.exec('DEALLOCATE ALL');
    await expect(first(triple, ['4'])).resolves.toEqual([{ n: 12 }]);
    await expect(first(triple, ['5'])).resolves.toEqual([{ n: 15 }]);
  });
});
