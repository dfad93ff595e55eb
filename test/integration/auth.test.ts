import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/auth/api-keys.ts';
import { createJwtVerifier } from '../../src/auth/jwt.ts';
import { fixedClock } from '../../src/lib/clock.ts';
import { newId } from '../../src/lib/ids.ts';
import { bootstrapOrganization } from '../../src/modules/organization/bootstrap.ts';
import { requestAuthenticator, type AuthenticateRequest } from '../support/authenticate.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';

const SECRET = 'auth-test-secret-auth-test-secret-1';
const sign = (claims: Record<string, unknown>, sub: string, opts: { secret?: string; exp?: string } = {}) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime(opts.exp ?? '5m')
    .sign(new TextEncoder().encode(opts.secret ?? SECRET));

describe.each(BACKENDS)('authentication on %s', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let authenticate: AuthenticateRequest;
  const clock = fixedClock(new Date());
  let orgId: string;
  let ownerKey: string;

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    const boot = await bootstrapOrganization(db.prisma, { org: 'acme', email: 'Owner@Acme.test' }, clock);
    orgId = boot.organizationId;
    ownerKey = boot.apiKey!;
    authenticate = requestAuthenticator({ db: db.prisma, clock, reads: db.reads, authEpoch: db.authEpoch, verifyJwt: createJwtVerifier({ secret: SECRET }) });
  });
  afterAll(() => db?.dispose());

  async function addKey(data: { userId?: string; serviceAccountId?: string; expiresAt?: Date; revokedAt?: Date; validUntil?: Date }) {
    const key = generateApiKey();
    await db.prisma.apiKey.create({
      data: { id: newId('key'), organizationId: orgId, name: 'k', secretHash: key.secretHash, fingerprint: key.fingerprint, ...data },
    });
    return key.value;
  }

  it('authenticates the bootstrapped owner by API key', async () => {
    const p = await authenticate(`Bearer ${ownerKey}`);
    expect(p).toMatchObject({ kind: 'user', role: 'owner', organizationId: orgId, email: 'owner@acme.test', credential: 'api_key' });
  });

  it('rejects missing, malformed, unknown, expired and revoked keys at once', async () => {
    const owner = await db.prisma.user.findUniqueOrThrow({ where: { email: 'owner@acme.test' } });
    const expired = await addKey({ userId: owner.id, expiresAt: new Date(clock.now().getTime() - 1) });
    const revoked = await addKey({ userId: owner.id, revokedAt: clock.now() });
    const cases: [string | undefined, RegExp][] = [
      [undefined, /Missing credentials/],
      ['Token abc', /Malformed Authorization header/],
      [`Bearer ${generateApiKey().value}`, /not valid/],
      [`Bearer ${expired}`, /expired/],
      [`Bearer ${revoked}`, /revoked/],
    ];
    for (const [header, detail] of cases) {
      await expect(authenticate(header), String(header)).rejects.toMatchObject({ status: 401, message: expect.stringMatching(detail) });
    }
  });

  it('keeps a rotated key valid only through its grace window', async () => {
    const owner = await db.prisma.user.findUniqueOrThrow({ where: { email: 'owner@acme.test' } });
    const key = await addKey({ userId: owner.id, revokedAt: clock.now(), validUntil: new Date(clock.now().getTime() + 60_000) });
    await expect(authenticate(`Bearer ${key}`)).resolves.toMatchObject({ kind: 'user' });
    clock.advance(60_001);
    await expect(authenticate(`Bearer ${key}`)).rejects.toMatchObject({ status: 401 });
  });

  it('stops a service account key while the account is inactive', async () => {
    const sa = await db.prisma.serviceAccount.create({
      data: { id: newId('sa'), organizationId: orgId, name: 'ci', createdBy: 'test', status: 'inactive' },
    });
    const key = await addKey({ serviceAccountId: sa.id });
    await expect(authenticate(`Bearer ${key}`)).rejects.toMatchObject({ status: 401, message: expect.stringMatching(/inactive/) });
    await db.prisma.serviceAccount.update({ where: { id: sa.id }, data: { status: 'active' } });
    await expect(authenticate(`Bearer ${key}`)).resolves.toMatchObject({ kind: 'service_account', serviceAccountId: sa.id });
  });

  it('links a first JWT to the invited member with that email and activates the invitation', async () => {
    const user = await db.prisma.user.create({ data: { id: newId('usr'), email: 'new@acme.test' } });
    await db.prisma.membership.create({
      data: { id: newId('mem'), organizationId: orgId, userId: user.id, role: 'manager', status: 'invited' },
    });
    const token = await sign({ email: 'New@acme.test', org_id: orgId }, 'idp|new');
    const p = await authenticate(`Bearer ${token}`);
    expect(p).toMatchObject({ kind: 'user', userId: user.id, role: 'manager', credential: 'jwt' });
    const stored = await db.prisma.user.findUniqueOrThrow({ where: { id: user.id }, include: { memberships: true } });
    expect(stored.idpUserId).toBe('idp|new');
    expect(stored.lastSignInAt).not.toBeNull();
    expect(stored.memberships[0]!.status).toBe('active');
    // Afterwards the subject alone identifies the user, even without the email claim.
    await expect(authenticate(`Bearer ${await sign({ org_id: orgId }, 'idp|new')}`)).resolves.toMatchObject({ userId: user.id });
  });

  it('rejects JWTs of strangers, other organizations, bad signatures and expired tokens', async () => {
    const cases = [
      await sign({ email: 'stranger@acme.test', org_id: orgId }, 'idp|stranger'),
      await sign({ email: 'owner@acme.test', org_id: 'org_other' }, 'idp|owner'),
      await sign({ email: 'owner@acme.test', org_id: orgId }, 'idp|owner', { secret: 'wrong-secret-wrong-secret-wrong-12' }),
      await sign({ email: 'owner@acme.test', org_id: orgId }, 'idp|owner', { exp: '-1m' }),
      await sign({ email: 'owner@acme.test' }, 'idp|owner'),
    ];
    for (const token of cases) await expect(authenticate(`Bearer ${token}`)).rejects.toMatchObject({ status: 401 });
    // The stranger's attempt did not create or link anything.
    expect(await db.prisma.user.findUnique({ where: { idpUserId: 'idp|stranger' } })).toBeNull();
  });

  it('refuses JWTs when no JWT verification is configured', async () => {
    const noJwt = requestAuthenticator({ db: db.prisma, clock, reads: db.reads, authEpoch: db.authEpoch });
    await expect(noJwt(`Bearer ${await sign({ org_id: orgId }, 'x')}`)).rejects.toMatchObject({
      status: 401,
      message: expect.stringMatching(/not enabled/),
    });
  });
});
