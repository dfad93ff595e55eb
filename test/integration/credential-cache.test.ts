import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-keys.ts';
import { createAuthenticator, type Authenticate } from '../../src/auth/authenticate.ts';
import { createCredentialCache } from '../../src/auth/credential-cache.ts';
import { API_KEY_BY_HASH, AUTH_EPOCH, type ApiKeyRow } from '../../src/auth/credential-lookup.ts';
import type { ReadRows } from '../../src/db/reads.ts';
import { fixedClock } from '../../src/lib/clock.ts';
import { newId } from '../../src/lib/ids.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';

/**
 * The API-key cache behind authentication: a key row is reused only while the auth epoch, read
 * after the request arrived, shows no change since. Changes here are made with plain Prisma
 * writes, not through the services, so the database's triggers alone must catch them.
 */
describe.each(BACKENDS)('credential cache on %s', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let authenticate: Authenticate;
  const reads = { [API_KEY_BY_HASH.name]: 0, [AUTH_EPOCH.name]: 0 };
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
    authenticate = createAuthenticator({ db: db.prisma, clock, reads: counted });
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

  it('reads a key once, then only the epoch, once per request', async () => {
    const key = await addKey({ userId });
    const [before, epochsBefore] = [lookups(), reads[AUTH_EPOCH.name]!];
    for (let i = 0; i < 3; i++) await expect(authenticate(key.header)).resolves.toMatchObject({ userId, role: 'manager' });
    expect(lookups() - before).toBe(1);
    expect(reads[AUTH_EPOCH.name]! - epochsBefore).toBe(3);
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

  it('shares one epoch read among requests that arrive while another is in flight', async () => {
    const sa = await db.prisma.serviceAccount.create({ data: { id: newId('sa'), organizationId: orgId, name: 'load', createdBy: userId } });
    const key = await addKey({ serviceAccountId: sa.id });
    await authenticate(key.header);
    const before = reads[AUTH_EPOCH.name]!;
    const principals = await Promise.all(Array.from({ length: 50 }, () => authenticate(key.header)));
    expect(principals.every((p) => p.kind === 'service_account')).toBe(true);
    expect(reads[AUTH_EPOCH.name]! - before).toBeLessThanOrEqual(2);
  });
});

describe('credential cache fence', () => {
  it('never answers a request with an epoch read that started before the request arrived', async () => {
    // A database of one key, where an epoch read sees the epoch of the moment it starts and
    // answers only when the test releases it.
    let epoch = 0n;
    let revoked = false;
    const pending: (() => void)[] = [];
    const reads: ReadRows = async <T,>(statement: { name: string }) => {
      if (statement.name === AUTH_EPOCH.name) {
        const seen = epoch;
        await new Promise<void>((resolve) => pending.push(resolve));
        return [{ epoch: String(seen) }] as T[];
      }
      const row: Partial<ApiKeyRow> = { id: 'key', revokedAt: revoked ? new Date(0) : null, epoch: String(epoch) };
      return [row] as T[];
    };
    const release = async () => {
      pending.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    };
    const cache = createCredentialCache(reads);

    const first = cache.apiKey('h');
    await release();
    expect((await first)?.revokedAt).toBeNull();

    const early = cache.apiKey('h'); // its epoch read starts now, before the revocation
    epoch = 1n;
    revoked = true; // the revocation commits
    const late = cache.apiKey('h'); // arrives after the revocation
    await release(); // the early read answers: epoch 0
    expect((await early)?.revokedAt).toBeNull(); // arrived before the revocation: the cached row is right for it
    expect(pending).toHaveLength(1); // the late request waits for a read of its own
    await release();
    expect((await late)?.revokedAt).toEqual(new Date(0));
  });
});
