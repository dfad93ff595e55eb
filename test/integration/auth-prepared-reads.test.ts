import type { PGlite } from '@electric-sql/pglite';
import { SignJWT } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-keys.ts';
import { createAuthenticator, type Authenticate } from '../../src/auth/authenticate.ts';
import { createJwtVerifier } from '../../src/auth/jwt.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { readsFromPglite } from '../../src/db/pglite-reads.ts';
import { readsFromPgPool, readsThroughPrisma, type ReadRows } from '../../src/db/reads.ts';
import { fixedClock } from '../../src/lib/clock.ts';
import { newId } from '../../src/lib/ids.ts';
import { createServiceAccountsService } from '../../src/modules/service-accounts/service.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';
import { loadConfig } from '../../src/config.ts';

// These tests only read service accounts; deleting one (which would queue its computers' teardown) is not among them.
const noComputers = { queue: { send: async () => '' }, managed: loadConfig({}).managed };

/**
 * The credential lookup and the service-account list through every way the server can read:
 * Prisma raw queries and prepared statements on the database's own driver. Each must see every
 * change at once (nothing is cached) and must never read inside another caller's transaction.
 */
const SECRET = 'prepared-reads-secret-prepared-reads-1';
const MINUTE = 60_000;

const READERS = ['prisma', 'prepared'] as const;
const cases = BACKENDS.flatMap((backend) => READERS.map((reader) => [backend, reader] as const));

describe.each(cases)('credential lookup on %s through %s reads', (backend, reader) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let pool: pg.Pool | undefined;
  let reads: ReadRows;
  let authenticate: Authenticate;
  const clock = fixedClock(new Date('2030-01-01T00:00:00Z'));
  let orgId: string;
  let userId: string;
  let membershipId: string;

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    if (reader === 'prisma') reads = readsThroughPrisma(db.prisma);
    else if (db.kind === 'pglite') reads = readsFromPglite(db.pglite);
    else reads = readsFromPgPool((pool = new pg.Pool({ connectionString: db.url })));
    authenticate = createAuthenticator({ db: db.prisma, clock, reads, verifyJwt: createJwtVerifier({ secret: SECRET }) });
    orgId = (await db.prisma.organization.create({ data: { id: newId('org'), name: 'acme' } })).id;
    userId = (await db.prisma.user.create({ data: { id: newId('usr'), email: 'ann@acme.test', idpUserId: 'idp|ann' } })).id;
    membershipId = (
      await db.prisma.membership.create({ data: { id: newId('mem'), organizationId: orgId, userId, role: 'manager' } })
    ).id;
  });
  afterAll(async () => {
    await pool?.end();
    await db?.dispose();
  });

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
      data: { id: newId('sa'), organizationId: orgId, name: `robot-${reader}`, createdBy: userId },
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
    const other = await db.prisma.user.create({ data: { id: newId('usr'), email: `gone-${reader}@acme.test` } });
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
    const service = createServiceAccountsService({ db: db.prisma, clock, reads, computers: noComputers });
    const empty = (await db.prisma.organization.create({ data: { id: newId('org'), name: `empty-${reader}` } })).id;
    const principal = (organizationId: string): Principal => ({
      organizationId,
      credential: 'api_key',
      kind: 'user',
      userId,
      email: 'ann@acme.test',
      role: 'owner',
    });
    await expect(service.list(principal(empty))).resolves.toEqual([]);
    await expect(service.list(principal('org_missing'))).rejects.toMatchObject({ status: 402 });

    const at = (minutes: number) => new Date(clock.now().getTime() + minutes * MINUTE);
    await db.prisma.serviceAccount.createMany({
      data: [
        { id: 'sa_a', organizationId: empty, name: 'old', createdBy: userId, createdAt: at(1), updatedAt: at(5), teamIds: ['t1'] },
        { id: 'sa_b', organizationId: empty, name: 'new', createdBy: userId, createdAt: at(2), updatedAt: at(2), description: 'd' },
        { id: 'sa_c', organizationId: empty, name: 'tie', createdBy: userId, createdAt: at(2), updatedAt: at(2), status: 'inactive' },
        { id: 'sa_d', organizationId: empty, name: 'gone', createdBy: userId, createdAt: at(3), updatedAt: at(3), status: 'deleted' },
      ],
    });
    const listed = await service.list(principal(empty));
    expect(listed).toEqual([
      { id: 'sa_c', name: 'tie', status: 'inactive', createdBy: userId, teamIds: [], createdAt: at(2).getTime(), updatedAt: at(2).getTime() },
      { id: 'sa_b', name: 'new', description: 'd', status: 'active', createdBy: userId, teamIds: [], createdAt: at(2).getTime(), updatedAt: at(2).getTime() },
      { id: 'sa_a', name: 'old', status: 'active', createdBy: userId, teamIds: ['t1'], createdAt: at(1).getTime(), updatedAt: at(5).getTime() },
    ]);
    await db.prisma.organization.update({ where: { id: empty }, data: { entitlements: { serviceAccounts: false } } });
    await expect(service.list(principal(empty))).rejects.toMatchObject({ status: 402 });
  });
});

describe.runIf(BACKENDS.includes('postgres'))('prepared reads on two replicas of one PostgreSQL database', () => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  const pools: pg.Pool[] = [];
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await db?.dispose();
  });

  it('refuses a key on replica B at once after replica A revoked it', async () => {
    db = await openTestDatabase('postgres');
    if (db.kind !== 'postgres') throw new Error('expected a PostgreSQL database');
    const clock = fixedClock(new Date());
    const url = db.url;
    const [a, b] = [0, 1].map(() => {
      const pool = new pg.Pool({ connectionString: url });
      pools.push(pool);
      return createAuthenticator({ db: db.prisma, clock, reads: readsFromPgPool(pool) });
    });
    const orgId = (await db.prisma.organization.create({ data: { id: newId('org'), name: 'acme' } })).id;
    const sa = await db.prisma.serviceAccount.create({ data: { id: newId('sa'), organizationId: orgId, name: 'ci', createdBy: 'test' } });
    const key = generateApiKey();
    const stored = await db.prisma.apiKey.create({
      data: { id: newId('key'), organizationId: orgId, serviceAccountId: sa.id, name: 'k', secretHash: key.secretHash, fingerprint: key.fingerprint },
    });
    // Both replicas have prepared the statement and served the key before the revocation.
    await expect(a!(`Bearer ${key.value}`)).resolves.toMatchObject({ serviceAccountId: sa.id });
    await expect(b!(`Bearer ${key.value}`)).resolves.toMatchObject({ serviceAccountId: sa.id });
    const service = createServiceAccountsService({ db: db.prisma, clock, reads: readsFromPgPool(pools[0]!), computers: noComputers });
    const owner: Principal = { organizationId: orgId, credential: 'api_key', kind: 'user', userId: 'usr_x', email: 'x@acme.test', role: 'owner' };
    await service.revokeKey(owner, sa.id, stored.id);
    await expect(b!(`Bearer ${key.value}`)).rejects.toMatchObject({ status: 401, message: expect.stringMatching(/revoked/) });
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
