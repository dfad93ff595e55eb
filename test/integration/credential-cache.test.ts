import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-keys.ts';
import { API_KEY_BY_HASH } from '../../src/auth/credential-lookup.ts';
import { fencedEpochReads } from '../../src/db/auth-epoch.ts';
import type { ReadRows } from '../../src/db/reads.ts';
import { fixedClock } from '../../src/lib/clock.ts';
import { newId } from '../../src/lib/ids.ts';
import { requestAuthenticator, type AuthenticateRequest } from '../support/authenticate.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';

const AUTH_EPOCH = 'agentplane_auth_epoch';

/**
 * The API-key cache behind authentication: a key row is reused only while the auth epoch as of a
 * moment after the request arrived shows no change since. Changes here are made with plain Prisma
 * writes, not through the services, so the database's triggers alone must catch them. On
 * PostgreSQL the epoch is a shared read; PGlite hears it from the triggers' notifications.
 */
describe.each(BACKENDS)('credential cache on %s', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let authenticate: AuthenticateRequest;
  const reads: Record<string, number> = { [API_KEY_BY_HASH.name]: 0, [AUTH_EPOCH]: 0 };
  const clock = fixedClock(new Date('2030-01-01T00:00:00Z'));
  let orgId: string;
  let userId: string;
  let membershipId: string;

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    const counted: ReadRows = (statement, params) => {
      reads[statement.name] = (reads[statement.name] ?? 0) + 1;
      return db.reads(statement, params);
    };
    // The epoch goes through the counted reads too, as the opened database would run it.
    const authEpoch = db.kind === 'postgres' ? fencedEpochReads(counted) : db.authEpoch;
    authenticate = requestAuthenticator({ db: db.prisma, clock, reads: counted, authEpoch });
    orgId = (await db.prisma.organization.create({ data: { id: newId('org'), name: 'acme' } })).id;
    userId = (await db.prisma.user.create({ data: { id: newId('usr'), email: 'ann@acme.test' } })).id;
    membershipId = (await db.prisma.membership.create({ data: { id: newId('mem'), organizationId: orgId, userId, role: 'manager' } })).id;
  });
  afterAll(() => db?.dispose());

  async function addKey(owner: { userId?: string; serviceAccountId?: string }, organizationId = orgId) {
    const key = generateApiKey();
    const row = await db.prisma.apiKey.create({
      data: { id: newId('key'), organizationId, name: 'k', secretHash: key.secretHash, fingerprint: key.fingerprint, ...owner },
    });
    return { id: row.id, header: `Bearer ${key.value}` };
  }
  const lookups = () => reads[API_KEY_BY_HASH.name]!;
  const rejected = (header: string, detail: RegExp) =>
    expect(authenticate(header)).rejects.toMatchObject({ status: 401, message: expect.stringMatching(detail) });

  it('reads a key once, then only the epoch, once per request (on PostgreSQL; PGlite is told)', async () => {
    const key = await addKey({ userId });
    await authenticate(key.header);
    const [before, epochsBefore] = [lookups(), reads[AUTH_EPOCH]!];
    for (let i = 0; i < 3; i++) await expect(authenticate(key.header)).resolves.toMatchObject({ userId, role: 'manager' });
    expect(lookups()).toBe(before);
    expect(reads[AUTH_EPOCH]! - epochsBefore).toBe(db.kind === 'postgres' ? 3 : 0);
  });

  it('keeps serving from the cache across writes that change no credential', async () => {
    const key = await addKey({ userId });
    await authenticate(key.header);
    const before = lookups();
    await db.prisma.apiKey.update({ where: { id: key.id }, data: { name: 'renamed', lastUsedAt: clock.now() } });
    await db.prisma.user.update({ where: { id: userId }, data: { firstName: 'Ann', lastSignInAt: clock.now() } });
    await db.prisma.membership.update({ where: { id: membershipId }, data: { role: 'manager', creditLimit: 2_000_000n } });
    await addKey({ userId });
    await expect(authenticate(key.header)).resolves.toMatchObject({ userId });
    expect(lookups()).toBe(before);
  });

  it('sees each change to a cached key, its owner or its organization on the very next request', async () => {
    const key = await addKey({ userId });
    await authenticate(key.header);
    await db.prisma.user.update({ where: { id: userId }, data: { email: 'ann.new@acme.test' } });
    await expect(authenticate(key.header)).resolves.toMatchObject({ email: 'ann.new@acme.test' });
    await db.prisma.membership.update({ where: { id: membershipId }, data: { role: 'guest' } });
    await expect(authenticate(key.header)).resolves.toMatchObject({ role: 'guest' });
    await db.prisma.apiKey.delete({ where: { id: key.id } });
    await rejected(key.header, /not valid/);

    // Inside an interactive transaction, as the services revoke.
    const revoked = await addKey({ userId });
    await authenticate(revoked.header);
    await db.prisma.$transaction(async (tx) => {
      await tx.apiKey.update({ where: { id: revoked.id }, data: { revokedAt: clock.now() } });
      await tx.user.update({ where: { id: userId }, data: { lastSignInAt: clock.now() } });
    });
    await rejected(revoked.header, /revoked/);

    const sa = await db.prisma.serviceAccount.create({ data: { id: newId('sa'), organizationId: orgId, name: 'ci', createdBy: userId } });
    const robot = await addKey({ serviceAccountId: sa.id });
    await expect(authenticate(robot.header)).resolves.toMatchObject({ serviceAccountId: sa.id });
    await db.prisma.serviceAccount.update({ where: { id: sa.id }, data: { status: 'inactive' } });
    await rejected(robot.header, /inactive/);

    const other = (await db.prisma.organization.create({ data: { id: newId('org'), name: 'gone' } })).id;
    await db.prisma.membership.create({ data: { id: newId('mem'), organizationId: other, userId, role: 'owner' } });
    const elsewhere = await addKey({ userId }, other);
    await expect(authenticate(elsewhere.header)).resolves.toMatchObject({ organizationId: other, role: 'owner' });
    await db.prisma.organization.delete({ where: { id: other } });
    await rejected(elsewhere.header, /not valid/);

    await db.prisma.membership.delete({ where: { id: membershipId } });
    const stillKnown = await addKey({ userId });
    await rejected(stillKnown.header, /no longer an active member/);
  });

  it('shares one epoch read among requests that arrive while another is in flight (PGlite needs none)', async () => {
    const sa = await db.prisma.serviceAccount.create({ data: { id: newId('sa'), organizationId: orgId, name: 'load', createdBy: userId } });
    const key = await addKey({ serviceAccountId: sa.id });
    await authenticate(key.header);
    const before = reads[AUTH_EPOCH]!;
    const principals = await Promise.all(Array.from({ length: 50 }, () => authenticate(key.header)));
    expect(principals.every((p) => p.kind === 'service_account')).toBe(true);
    expect(reads[AUTH_EPOCH]! - before).toBeLessThanOrEqual(db.kind === 'postgres' ? 2 : 0);
  });
});

describe('the auth epoch on PostgreSQL', () => {
  it('never answers a call with a read that started before the call', async () => {
    // A database of one key, where an epoch read sees the epoch of the moment it starts and
    // answers only when the test releases it.
    let epoch = 0n;
    const pending: (() => void)[] = [];
    const reads: ReadRows = async <T>() => {
      const seen = epoch;
      await new Promise<void>((resolve) => pending.push(resolve));
      return [{ epoch: String(seen) }] as T[];
    };
    const release = async () => {
      pending.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    };
    const fence = fencedEpochReads(reads);

    const first = fence();
    await release();
    expect(await first).toBe(0n);

    const early = fence(); // its read starts now, before the revocation
    epoch = 1n; // the revocation commits
    const late = fence(); // called after the revocation
    await release(); // the early read answers
    expect(await early).toBe(0n);
    expect(pending).toHaveLength(1); // the late call waits for a read of its own
    await release();
    expect(await late).toBe(1n);
  });
});
