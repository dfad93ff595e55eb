import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../../src/auth/issue-api-key.ts';
import type { Role } from '../../src/auth/principal.ts';
import { fixedClock } from '../../src/lib/clock.ts';
import { withSqlConnection } from '../../src/db/client.ts';
import { newId } from '../../src/lib/ids.ts';
import { recordAudit } from '../../src/modules/audit/record.ts';
import { openCustomModelKeys } from '../../src/modules/organization/custom-model-keys.ts';
import { sealStoredCustomModelKeys } from '../../src/modules/organization/enterprise-controls.ts';
import { resolveModel } from '../../src/agent/models.ts';
import fs from 'node:fs';
import { ALLOW_LOOPBACK, createOrgFixture, JWT_SECRET, startTestApi, type OrgFixture, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';

const USERS = '/api/v0/organization/users';
const INVITE = '/api/v0/organization/users/invite';
const GLOBAL = '/api/v0/organization/usage/limits/global';
const PER_USER = '/api/v0/organization/usage/limits/users';
const CONTROLS = '/api/v0/organization/enterprise-controls';
const HISTORY = '/api/v0/organization/enterprise-controls/history';

// userId, role and status are agentplane's extension: the console names owners and creators by them and tells the last owner apart (#34).
const USER_FIELDS = ['id', 'email', 'firstName', 'lastName', 'createdAt', 'lastSignInAt', 'metadata', 'userId', 'role', 'status'];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe.each(BACKENDS)('organization management on %s', (backend) => {
  // A day ahead of the database's own clock, so rows this clock stamps are newer than fixture rows.
  const clock = fixedClock(new Date(Date.now() + 86_400_000));
  let api: TestApi;
  let acme: OrgFixture;
  let globex: OrgFixture;
  let orgCount = 0;

  beforeAll(async () => {
    api = await startTestApi(backend, { clock, env: ALLOW_LOOPBACK });
    acme = api.acme;
    globex = api.globex;
  });
  afterAll(() => api?.close());

  const db = () => api.db.prisma;
  /** Every change happens a millisecond after the previous one, so audit rows have an order. */
  const call: TestApi['call'] = (method, path, opts) => {
    if (method !== 'GET') clock.advance(1);
    return api.call(method, path, opts);
  };
  /** A separate organization, so a test can change owners, seats or history without touching others. */
  const freshOrg = () => createOrgFixture(api.db, `org${++orgCount}`);
  /** The name a fixture organization was created with (its members are `<role>@<name>.test`, signed in as `idp|<name>-<role>`). */
  const orgName = (org: OrgFixture) => org.members.owner.email.split('@')[1]!.replace(/\.test$/, '');
  const membershipOf = (orgId: string, email: string) => db().membership.findFirst({ where: { organizationId: orgId, user: { email } } });
  const audits = (orgId: string, eventType: string) =>
    db().auditRecord.findMany({ where: { organizationId: orgId, eventType }, orderBy: { createdAt: 'asc' } });
  const invite = (org: OrgFixture, body: unknown, as = org.members.owner.apiKey) => call('POST', INVITE, { as, body });
  const remove = (org: OrgFixture, email: string, as = org.members.owner.apiKey) => call('DELETE', `${USERS}?email=${encodeURIComponent(email)}`, { as });

  /** An extra active member with a personal API key and a JWT. */
  async function addMember(org: OrgFixture, role: Role, email = `${newId('m')}@members.test`) {
    const sub = `idp|${newId('s')}`;
    const user = await db().user.create({ data: { id: newId('usr'), email, idpUserId: sub } });
    await db().membership.create({ data: { id: newId('mem'), organizationId: org.id, userId: user.id, role } });
    const key = await issueApiKey(db(), { organizationId: org.id, owner: { userId: user.id }, name: 'personal', now: clock.now() });
    const jwt = await new SignJWT({ email, org_id: org.id })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(sub)
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(JWT_SECRET));
    return { userId: user.id, sub, email, apiKey: key.value, jwt };
  }

  describe('authorization', () => {
    const endpoints: [string, string, unknown?][] = [
      ['GET', USERS],
      ['DELETE', `${USERS}?email=user@acme.test`],
      ['POST', INVITE, { email: 'someone@acme.test' }],
      ['GET', GLOBAL],
      ['PUT', GLOBAL, { limit: 2_000_000 }],
      ['GET', PER_USER],
      ['PUT', PER_USER, { users: [{ email: 'user@acme.test', limit: 2_000_000 }] }],
      ['GET', CONTROLS],
      ['PUT', CONTROLS, { settings: { denied: true } }],
      ['GET', HISTORY],
    ];

    it('refuses user and guest members and service accounts with 403, changing nothing', async () => {
      const callers = [acme.members.user.apiKey, acme.members.user.jwt, acme.members.guest.apiKey, acme.members.guest.jwt, acme.serviceAccount.apiKey];
      const auditBefore = await db().auditRecord.count();
      for (const [method, path, body] of endpoints) {
        for (const as of callers) {
          const res = await call(method, path, { as, body });
          expect(res.status, `${method} ${path}`).toBe(403);
          expect(res.body).toMatchObject({ status: 403, title: 'Forbidden' });
          // Changing the enterprise controls is for people only, whatever the role.
          const peopleOnly = as === acme.serviceAccount.apiKey && method === 'PUT' && path === CONTROLS;
          expect(res.body.detail).toMatch(peopleOnly ? /authenticate as a human user/ : /manager or owner/);
        }
      }
      expect(await db().auditRecord.count()).toBe(auditBefore);
      expect(await membershipOf(acme.id, 'user@acme.test')).toMatchObject({ role: 'user', status: 'active' });
      expect(await membershipOf(acme.id, 'someone@acme.test')).toBeNull();
    });

    it('answers 401 without a credential', async () => {
      for (const [method, path, body] of endpoints) {
        expect((await call(method, path, { body })).status, `${method} ${path}`).toBe(401);
      }
    });

    it('lets managers and owners in with API keys and JWTs', async () => {
      for (const as of [acme.members.manager.apiKey, acme.members.manager.jwt, acme.members.owner.apiKey, acme.members.owner.jwt]) {
        expect((await call('GET', USERS, { as })).status).toBe(200);
        expect((await call('GET', CONTROLS, { as })).status).toBe(200);
      }
    });
  });

  describe('users list', () => {
    it("lists the organization's members with the wire fields only, never another organization's", async () => {
      await db().user.update({ where: { id: acme.members.user.userId }, data: { metadata: { team: 'core', level: 3 } } });
      const res = await call('GET', `${USERS}?limit=100`, { as: acme.members.manager.apiKey });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['pagination', 'users']);
      const emails = res.body.users.map((u: { email: string }) => u.email);
      for (const role of ['owner', 'manager', 'user', 'guest'] as const) expect(emails).toContain(`${role}@acme.test`);
      expect(emails.filter((e: string) => e.endsWith('@globex.test'))).toEqual([]);
      for (const u of res.body.users) {
        for (const key of Object.keys(u)) expect(USER_FIELDS).toContain(key);
        expect(u.createdAt).toMatch(ISO);
      }
      // The identity-provider id (the fixture's members all have one).
      for (const role of ['owner', 'manager', 'user', 'guest'] as const) {
        expect(res.body.users.find((u: { email: string }) => u.email === `${role}@acme.test`)).toMatchObject({
          id: `idp|acme-${role}`,
          userId: api.acme.members[role].userId,
          role,
          status: 'active',
        });
      }
      const user = res.body.users.find((u: { email: string }) => u.email === 'user@acme.test');
      expect(user).toEqual({
        id: 'idp|acme-user',
        email: 'user@acme.test',
        firstName: 'user',
        lastName: 'acme',
        createdAt: expect.stringMatching(ISO),
        // The authorization tests above signed in with this member's token.
        lastSignInAt: expect.stringMatching(ISO),
        metadata: { team: 'core' },
        userId: api.acme.members.user.userId,
        role: 'user',
        status: 'active',
      });
      expect(res.body.pagination).toEqual({ hasMore: false, nextCursor: null });
    });

    it("shows agentplane's id for a user without an identity, and the identity-provider id from the first sign-in on", async () => {
      const org = await freshOrg();
      const email = `${newId('new')}@joiner.test`;
      expect((await invite(org, { email, role: 'user' })).body.status).toBe('invited');
      const idOf = async () => {
        const res = await call('GET', `${USERS}?limit=100`, { as: org.members.owner.apiKey });
        return res.body.users.find((u: { email: string }) => u.email === email).id as string;
      };
      const before = await idOf();
      expect(before).toMatch(/^usr_/);
      const jwt = await new SignJWT({ email, org_id: org.id })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('idp|joiner')
        .setExpirationTime('1h')
        .sign(new TextEncoder().encode(JWT_SECRET));
      expect((await call('GET', '/api/v0/computers/providers', { as: jwt })).status).toBe(200);
      expect(await idOf()).toBe('idp|joiner');
    });

    it('shows sign-in time once a member signed in with a token', async () => {
      await call('GET', USERS, { as: acme.members.manager.jwt });
      const res = await call('GET', `${USERS}?limit=100`, { as: acme.members.owner.apiKey });
      const manager = res.body.users.find((u: { email: string }) => u.email === 'manager@acme.test');
      const stored = await db().user.findUniqueOrThrow({ where: { id: acme.members.manager.userId } });
      expect(stored.lastSignInAt).not.toBeNull();
      expect(manager.lastSignInAt).toBe(stored.lastSignInAt!.toISOString());
    });

    it('pages newest first without repeats or gaps, even when members join between pages', async () => {
      const org = await freshOrg();
      for (let i = 0; i < 21; i++) {
        // Every third invitation shares its predecessor's instant, so the id must break ties.
        if (i % 3 !== 0) clock.advance(1000);
        const res = await api.call('POST', INVITE, { as: org.members.owner.apiKey, body: { email: `p${i}@paging.test` } });
        expect(res.body.status).toBe('invited');
      }
      const total = await db().membership.count({ where: { organizationId: org.id } });
      expect(total).toBe(25);
      const seen: { email: string; createdAt: string }[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: { status: number; body: any } = await call('GET', `${USERS}?limit=7${cursor ? `&cursor=${cursor}` : ''}`, {
          as: org.members.manager.apiKey,
        });
        expect(res.status).toBe(200);
        expect(res.body.users.length).toBeLessThanOrEqual(7);
        seen.push(...res.body.users);
        cursor = res.body.pagination.nextCursor;
        expect(res.body.pagination.hasMore).toBe(cursor !== null);
        if (pages++ === 0) {
          clock.advance(1000);
          await invite(org, { email: 'late@paging.test' });
        }
      } while (cursor);
      expect(pages).toBe(4);
      const emails = seen.map((u) => u.email);
      expect(new Set(emails).size).toBe(25);
      expect(emails).not.toContain('late@paging.test');
      expect(emails[0]).toBe('p20@paging.test');
      const times = seen.map((u) => u.createdAt);
      expect([...times].sort().reverse()).toEqual(times);
    });

    it('lists pending invitations', async () => {
      await invite(acme, { email: 'pending-list@acme.test' });
      const res = await call('GET', `${USERS}?limit=100`, { as: acme.members.owner.apiKey });
      expect(res.body.users.map((u: { email: string }) => u.email)).toContain('pending-list@acme.test');
    });

    it('rejects a bad limit or a tampered cursor with 400', async () => {
      for (const q of ['limit=0', 'limit=101', 'limit=abc', 'cursor=bm90LWEtY3Vyc29y']) {
        const res = await call('GET', `${USERS}?${q}`, { as: acme.members.owner.apiKey });
        expect(res.status, q).toBe(400);
        expect(res.body.detail).toBeTruthy();
      }
    });
  });

  describe('invite', () => {
    it('invites a new email (lower-cased) with role user by default, audited', async () => {
      clock.advance(1000);
      const res = await invite(acme, { email: 'New.Person@Example.test' }, acme.members.manager.apiKey);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ email: 'new.person@example.test', role: 'user', status: 'invited' });
      const m = await membershipOf(acme.id, 'new.person@example.test');
      expect(m).toMatchObject({ role: 'user', status: 'invited', createdAt: clock.now() });
      const audit = (await audits(acme.id, 'membership_change')).find((a) => (a.target as { email?: string }).email === 'new.person@example.test');
      expect(audit).toMatchObject({
        source: 'public_api_v0',
        actorKind: 'human',
        actorId: acme.members.manager.userId,
        payload: { intent: 'invite', fromRole: null, toRole: 'user' },
        before: null,
        after: { role: 'user', status: 'invited' },
      });
    });

    it('returns a pending invitation unchanged', async () => {
      await invite(acme, { email: 'pending@acme.test', role: 'guest' });
      const auditCount = (await audits(acme.id, 'membership_change')).length;
      const res = await invite(acme, { email: 'PENDING@acme.test', role: 'manager' });
      expect(res.body).toEqual({ email: 'pending@acme.test', role: 'guest', status: 'already_invited' });
      expect(await membershipOf(acme.id, 'pending@acme.test')).toMatchObject({ role: 'guest', status: 'invited' });
      expect(await audits(acme.id, 'membership_change')).toHaveLength(auditCount);
    });

    it("updates an existing member's role, and reports an unchanged one as already_member", async () => {
      const m = await addMember(acme, 'user');
      const res = await invite(acme, { email: m.email, role: 'manager' }, acme.members.manager.jwt);
      expect(res.body).toEqual({ email: m.email, role: 'manager', status: 'role_updated' });
      expect(await membershipOf(acme.id, m.email)).toMatchObject({ role: 'manager', status: 'active' });
      const audit = (await audits(acme.id, 'membership_change')).at(-1);
      expect(audit).toMatchObject({
        payload: { intent: 'role_change', fromRole: 'user', toRole: 'manager' },
        before: { role: 'user', status: 'active' },
        after: { role: 'manager', status: 'active' },
      });
      const count = (await audits(acme.id, 'membership_change')).length;
      const again = await invite(acme, { email: m.email, role: 'manager' });
      expect(again.body).toEqual({ email: m.email, role: 'manager', status: 'already_member' });
      expect(await audits(acme.id, 'membership_change')).toHaveLength(count);
    });

    it('invites a member of another organization without touching that membership', async () => {
      const res = await invite(acme, { email: 'guest@globex.test', role: 'user' });
      expect(res.body.status).toBe('invited');
      expect(await membershipOf(globex.id, 'guest@globex.test')).toMatchObject({ role: 'guest', status: 'active' });
      expect(await remove(acme, 'guest@globex.test')).toMatchObject({ status: 204 });
      expect(await membershipOf(globex.id, 'guest@globex.test')).toMatchObject({ role: 'guest', status: 'active' });
    });

    it('lets only owners grant or take away the owner role (managers get 403)', async () => {
      const org = await freshOrg();
      const byManager = await invite(org, { email: 'boss@owners.test', role: 'owner' }, org.members.manager.apiKey);
      expect(byManager.status).toBe(403);
      expect(byManager.body.detail).toMatch(/Only an owner may grant the owner role/);
      expect(await membershipOf(org.id, 'boss@owners.test')).toBeNull();
      const demote = await invite(org, { email: org.members.owner.email, role: 'user' }, org.members.manager.apiKey);
      expect(demote.status).toBe(403);
      expect(demote.body.detail).toMatch(/Only an owner may change an owner's role/);
      expect(await membershipOf(org.id, org.members.owner.email)).toMatchObject({ role: 'owner' });
      const promote = await invite(org, { email: org.members.user.email, role: 'owner' }, org.members.owner.jwt);
      expect(promote.body).toEqual({ email: org.members.user.email, role: 'owner', status: 'role_updated' });
      const inviteOwner = await invite(org, { email: 'boss@owners.test', role: 'owner' }, org.members.owner.apiKey);
      expect(inviteOwner.body.status).toBe('invited');
      const promoteByManager = await invite(org, { email: org.members.guest.email, role: 'owner' }, org.members.manager.apiKey);
      expect(promoteByManager.status).toBe(403);
      expect(await membershipOf(org.id, org.members.guest.email)).toMatchObject({ role: 'guest' });
    });

    it("answers a manager's invitation that would change nothing, also for an owner, without asking for an owner", async () => {
      const org = await freshOrg();
      await invite(org, { email: 'pending-boss@owners.test', role: 'owner' }, org.members.owner.apiKey);
      const auditsBefore = (await audits(org.id, 'membership_change')).length;
      const asManager = org.members.manager.apiKey;
      expect((await invite(org, { email: org.members.owner.email, role: 'owner' }, asManager)).body).toEqual({
        email: org.members.owner.email,
        role: 'owner',
        status: 'already_member',
      });
      expect((await invite(org, { email: 'pending-boss@owners.test', role: 'owner' }, asManager)).body).toEqual({
        email: 'pending-boss@owners.test',
        role: 'owner',
        status: 'already_invited',
      });
      expect(await audits(org.id, 'membership_change')).toHaveLength(auditsBefore);
    });

    it('refuses to demote the last owner with 409', async () => {
      const org = await freshOrg();
      const res = await invite(org, { email: org.members.owner.email, role: 'manager' });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ status: 409, title: 'Conflict' });
      expect(res.body.detail).toMatch(/last owner/);
      expect(await membershipOf(org.id, org.members.owner.email)).toMatchObject({ role: 'owner' });
      expect(await audits(org.id, 'membership_change')).toHaveLength(0);
      // With a second owner the first may step down.
      await invite(org, { email: org.members.manager.email, role: 'owner' });
      const stepDown = await invite(org, { email: org.members.owner.email, role: 'manager' });
      expect(stepDown.body.status).toBe('role_updated');
    });

    it('answers status error at the seat limit, counting pending invitations', async () => {
      const org = await freshOrg();
      await db().organization.update({ where: { id: org.id }, data: { seatLimit: 5 } });
      expect((await invite(org, { email: 'fifth@seats.test' })).body.status).toBe('invited');
      const full = await invite(org, { email: 'sixth@seats.test', role: 'manager' });
      expect(full.status).toBe(200);
      expect(full.body).toEqual({ email: 'sixth@seats.test', role: 'manager', status: 'error', error: expect.stringMatching(/seat limit of 5/) });
      expect(await membershipOf(org.id, 'sixth@seats.test')).toBeNull();
      expect(await db().user.findUnique({ where: { email: 'sixth@seats.test' } })).toBeNull();
      // Role changes of existing members do not take a seat.
      expect((await invite(org, { email: org.members.guest.email, role: 'user' })).body.status).toBe('role_updated');
      expect(await remove(org, 'fifth@seats.test')).toMatchObject({ status: 204 });
      expect((await invite(org, { email: 'sixth@seats.test' })).body.status).toBe('invited');
    });

    it('rejects malformed bodies with 400 and creates nothing', async () => {
      const before = await db().membership.count({ where: { organizationId: acme.id } });
      const bodies = [{}, { email: 'not-an-email' }, { email: 'x@acme.test', role: 'admin' }, { email: 'x@acme.test', extra: true }, { email: 42 }];
      for (const body of bodies) {
        const res = await invite(acme, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.metadata.errors.length).toBeGreaterThan(0);
      }
      expect((await call('POST', INVITE, { as: acme.members.owner.apiKey, rawBody: '{"email":' })).status).toBe(400);
      expect(await db().membership.count({ where: { organizationId: acme.id } })).toBe(before);
    });
  });

  describe('remove', () => {
    it("deletes an active member's membership and their credentials stop working at once", async () => {
      const m = await addMember(acme, 'user');
      expect((await call('GET', '/api/v0/computers/providers', { as: m.apiKey })).status).toBe(200);
      expect((await call('GET', '/api/v0/computers/providers', { as: m.jwt })).status).toBe(200);
      clock.advance(1000);
      const res = await remove(acme, m.email.toUpperCase(), acme.members.manager.apiKey);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expect(await membershipOf(acme.id, m.email)).toBeNull();
      expect(await db().apiKey.findMany({ where: { userId: m.userId } })).toEqual([expect.objectContaining({ revokedAt: clock.now() })]);
      for (const as of [m.apiKey, m.jwt]) {
        const after = await call('GET', '/api/v0/computers/providers', { as });
        expect(after.status).toBe(401);
      }
      const audit = (await audits(acme.id, 'membership_change')).at(-1);
      expect(audit).toMatchObject({
        actorId: acme.members.manager.userId,
        target: { email: m.email, userId: m.userId },
        payload: { intent: 'remove', fromRole: 'user', toRole: null, revokedApiKeys: 1 },
        before: { role: 'user', status: 'active' },
        after: null,
      });
    });

    it.runIf(backend === 'postgres')("ends a removed member's credentials at once on every replica, and a demoted one's role", async () => {
      const other = await api.replica();
      try {
        const onOther = async (as: string, path = '/api/v0/computers/providers') =>
          (await fetch(`${other.url}${path}`, { headers: { authorization: `Bearer ${as}` } })).status;
        const [leaving, demoted] = [await addMember(acme, 'user'), await addMember(acme, 'manager')];
        for (const as of [leaving.apiKey, leaving.jwt]) expect(await onOther(as)).toBe(200);
        expect(await onOther(demoted.apiKey, USERS)).toBe(200);

        expect((await remove(acme, leaving.email, acme.members.manager.apiKey)).status).toBe(204);
        for (const as of [leaving.apiKey, leaving.jwt]) expect(await onOther(as)).toBe(401);

        expect((await invite(acme, { email: demoted.email, role: 'user' })).body.status).toBe('role_updated');
        expect(await onOther(demoted.apiKey, USERS)).toBe(403);
      } finally {
        await other.close();
      }
    });

    it('revokes a pending invitation', async () => {
      await invite(acme, { email: 'revoke-me@acme.test', role: 'guest' });
      expect(await remove(acme, 'revoke-me@acme.test')).toMatchObject({ status: 204 });
      expect(await membershipOf(acme.id, 'revoke-me@acme.test')).toBeNull();
      expect((await audits(acme.id, 'membership_change')).at(-1)).toMatchObject({
        payload: { intent: 'revoke_invite', fromRole: 'guest', toRole: null },
      });
      expect((await remove(acme, 'revoke-me@acme.test')).status).toBe(404);
    });

    it("answers 404 for an unknown email or another organization's member", async () => {
      for (const email of ['nobody@acme.test', 'user@globex.test']) {
        const res = await remove(acme, email);
        expect(res.status, email).toBe(404);
        expect(res.body.detail).toMatch(/GET \/api\/v0\/organization\/users/);
      }
      expect(await membershipOf(globex.id, 'user@globex.test')).toMatchObject({ status: 'active' });
      expect((await call('GET', '/api/v0/computers/providers', { as: globex.members.user.apiKey })).status).toBe(200);
    });

    it('answers 400 for a missing or malformed email', async () => {
      const before = await db().membership.count();
      for (const path of [USERS, `${USERS}?email=`, `${USERS}?email=user`, `${USERS}?email=user%40`]) {
        const res = await call('DELETE', path, { as: acme.members.owner.apiKey });
        expect(res.status, path).toBe(400);
        expect(res.body.detail).toMatch(/email/);
      }
      expect(await db().membership.count()).toBe(before);
    });

    it('lets only owners remove an owner, and never the last one (409)', async () => {
      const org = await freshOrg();
      const byManager = await remove(org, org.members.owner.email, org.members.manager.apiKey);
      expect(byManager.status).toBe(403);
      expect(byManager.body.detail).toMatch(/Only an owner may remove an owner/);
      const last = await remove(org, org.members.owner.email, org.members.owner.apiKey);
      expect(last.status).toBe(409);
      expect(last.body.detail).toMatch(/last owner/);
      expect(await membershipOf(org.id, org.members.owner.email)).toMatchObject({ role: 'owner', status: 'active' });
      expect((await call('GET', USERS, { as: org.members.owner.apiKey })).status).toBe(200);
      expect(await audits(org.id, 'membership_change')).toHaveLength(0);
      await invite(org, { email: org.members.manager.email, role: 'owner' });
      expect((await remove(org, org.members.owner.email, org.members.manager.apiKey)).status).toBe(204);
      expect((await call('GET', USERS, { as: org.members.owner.apiKey })).status).toBe(401);
    });
  });

  describe('credits limits', () => {
    it('sets, reads and removes the global limit, audited', async () => {
      const org = await freshOrg();
      const as = org.members.manager.apiKey;
      expect((await call('GET', GLOBAL, { as })).body).toEqual({ limit: null });
      const set = await call('PUT', GLOBAL, { as, body: { limit: 10_000_000_000 } });
      expect(set).toMatchObject({ status: 200, body: { limit: 10_000_000_000 } });
      expect((await db().organization.findUnique({ where: { id: org.id } }))?.creditLimit).toBe(10_000_000_000n);
      expect((await call('GET', GLOBAL, { as })).body).toEqual({ limit: 10_000_000_000 });
      expect((await call('PUT', GLOBAL, { as, body: { limit: null } })).body).toEqual({ limit: null });
      expect((await db().organization.findUnique({ where: { id: org.id } }))?.creditLimit).toBeNull();
      const changes = await audits(org.id, 'user_limit_change');
      expect(changes.map((a) => a.payload)).toEqual([
        { scope: 'global', toTokens: 10_000_000_000 },
        { scope: 'global', toTokens: null },
      ]);
      expect(changes[1]).toMatchObject({ before: { limit: 10_000_000_000 }, after: { limit: null }, source: 'public_api_v0' });
    });

    it('rejects an invalid global limit with 400 and keeps the old one', async () => {
      const org = await freshOrg();
      const as = org.members.owner.apiKey;
      await call('PUT', GLOBAL, { as, body: { limit: 2_000_000 } });
      for (const body of [{ limit: 999_999 }, { limit: 1_500_000.5 }, { limit: '2000000' }, {}, { limit: 3_000_000, x: 1 }, [2_000_000]]) {
        const res = await call('PUT', GLOBAL, { as, body });
        expect(res.status, JSON.stringify(body)).toBe(400);
      }
      expect((await call('GET', GLOBAL, { as })).body).toEqual({ limit: 2_000_000 });
      expect(await audits(org.id, 'user_limit_change')).toHaveLength(1);
    });

    it('applies valid per-user entries and reports the others (partial success)', async () => {
      const org = await freshOrg();
      const as = org.members.owner.apiKey;
      await invite(org, { email: 'invited@limits.test' });
      const res = await call('PUT', PER_USER, {
        as,
        body: {
          users: [
            { email: 'User@' + org.members.user.email.split('@')[1], limit: 5_000_000 },
            { email: 'invited@limits.test', limit: 7_000_000 },
            { email: 'stranger@limits.test', limit: 5_000_000 },
            { email: org.members.guest.email, limit: 10 },
            { email: 'not-an-email', limit: 5_000_000 },
            { email: 'user@globex.test', limit: 5_000_000 },
            { email: org.members.manager.email, limit: 2_000_000 },
            { email: org.members.manager.email.toUpperCase(), limit: 3_000_000 },
            { email: org.members.owner.email },
          ],
        },
      });
      expect(res.status).toBe(200);
      expect(res.body.updated).toEqual([
        { email: org.members.user.email, limit: 5_000_000 },
        { email: 'invited@limits.test', limit: 7_000_000 },
      ]);
      expect(res.body.errors.map((e: { email: string }) => e.email)).toEqual([
        'stranger@limits.test',
        org.members.guest.email,
        'not-an-email',
        'user@globex.test',
        org.members.manager.email,
        org.members.manager.email.toUpperCase(),
        org.members.owner.email,
      ]);
      for (const e of res.body.errors) expect(Object.keys(e).sort()).toEqual(['email', 'message']);
      expect(res.body.errors[0].message).toMatch(/invite the user first/);
      expect(res.body.errors[1].message).toMatch(/limit: must be at least 1,000,000/);
      expect(res.body.errors[4].message).toMatch(/appears 2 times/);
      expect((await membershipOf(org.id, org.members.guest.email))?.creditLimit).toBeNull();
      expect((await membershipOf(org.id, org.members.manager.email))?.creditLimit).toBeNull();
      expect((await membershipOf(globex.id, 'user@globex.test'))?.creditLimit).toBeNull();

      expect((await call('GET', PER_USER, { as })).body).toEqual({
        globalLimit: null,
        userLimits: [
          { email: 'invited@limits.test', limit: 7_000_000 },
          { email: org.members.user.email, limit: 5_000_000 },
        ],
      });
      expect((await audits(org.id, 'user_limit_change')).map((a) => a.payload)).toEqual([
        { scope: 'individual', toTokens: 5_000_000 },
        { scope: 'individual', toTokens: 7_000_000 },
      ]);
    });

    it('takes a bare array, and null removes an override', async () => {
      const org = await freshOrg();
      const as = org.members.manager.jwt;
      await call('PUT', GLOBAL, { as, body: { limit: 4_000_000 } });
      await call('PUT', PER_USER, { as, body: [{ email: org.members.user.email, limit: 9_000_000 }] });
      expect((await call('GET', PER_USER, { as })).body).toEqual({
        globalLimit: 4_000_000,
        userLimits: [{ email: org.members.user.email, limit: 9_000_000 }],
      });
      const res = await call('PUT', PER_USER, { as, body: [{ email: org.members.user.email, limit: null }] });
      expect(res.body).toEqual({ updated: [{ email: org.members.user.email, limit: null }], errors: [] });
      expect((await call('GET', PER_USER, { as })).body).toEqual({ globalLimit: 4_000_000, userLimits: [] });
      expect((await audits(org.id, 'user_limit_change')).at(-1)).toMatchObject({
        payload: { scope: 'individual', toTokens: null },
        before: { limit: 9_000_000 },
        after: { limit: null },
      });
    });

    it('rejects a malformed per-user body with 400 and changes nothing', async () => {
      const org = await freshOrg();
      const as = org.members.owner.apiKey;
      const entry = { email: org.members.user.email, limit: 5_000_000 };
      const bodies = [
        'limits',
        42,
        [],
        { users: [] },
        { users: Array.from({ length: 101 }, () => entry) },
        Array.from({ length: 101 }, () => entry),
        [entry, { limit: 5_000_000 }],
        [entry, 'user@x.test'],
        { users: [entry], extra: true },
      ];
      for (const body of bodies) {
        const res = await call('PUT', PER_USER, { as, body });
        expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      }
      expect((await membershipOf(org.id, org.members.user.email))?.creditLimit).toBeNull();
      expect(await audits(org.id, 'user_limit_change')).toHaveLength(0);
      const hundred = Array.from({ length: 100 }, (_, i) => ({ email: `n${i}@limits.test`, limit: 5_000_000 }));
      const ok = await call('PUT', PER_USER, { as, body: { users: hundred } });
      expect(ok.status).toBe(200);
      expect(ok.body.errors).toHaveLength(100);
    });
  });

  describe('enterprise controls', () => {
    it('replaces the settings, bumps the revision and records history and audit', async () => {
      const org = await freshOrg();
      const as = org.members.owner.apiKey;
      expect((await call('GET', CONTROLS, { as })).body).toEqual({ revision: 0, settings: {} });
      clock.advance(1000);
      const first = await call('PUT', CONTROLS, { as, body: { settings: { maxAutonomyLevel: 'low', sandbox: { enabled: true } } } });
      expect(first).toMatchObject({ status: 200, body: { revision: 1, settings: { maxAutonomyLevel: 'low', sandbox: { enabled: true } } } });
      const firstAt = clock.now().toISOString();
      // The same document again is no change: no new revision, no history entry.
      const same = await call('PUT', CONTROLS, { as, body: { settings: { sandbox: { enabled: true }, maxAutonomyLevel: 'low' } } });
      expect(same.body.revision).toBe(1);
      clock.advance(1000);
      const second = await call('PUT', CONTROLS, {
        as: org.members.manager.jwt,
        body: { settings: { sandbox: { enabled: true }, commandDenylist: ['rm -rf /'] } },
      });
      expect(second.body).toEqual({ revision: 2, settings: { sandbox: { enabled: true }, commandDenylist: ['rm -rf /'] } });
      expect((await call('GET', CONTROLS, { as })).body).toEqual(second.body);

      const history = await call('GET', HISTORY, { as });
      expect(history.status).toBe(200);
      expect(history.body).toEqual({
        changes: [
          {
            revision: 2,
            settings: second.body.settings,
            user: { id: `idp|${orgName(org)}-manager`, email: org.members.manager.email, name: `manager ${orgName(org)}` },
            updatedAt: clock.now().toISOString(),
          },
          {
            revision: 1,
            settings: { maxAutonomyLevel: 'low', sandbox: { enabled: true } },
            user: { id: `idp|${orgName(org)}-owner`, email: org.members.owner.email, name: `owner ${orgName(org)}` },
            updatedAt: firstAt,
          },
        ],
        pagination: { hasMore: false, nextCursor: null },
      });
      const audit = await audits(org.id, 'managed_settings_change');
      expect(audit.map((a) => a.payload)).toEqual([
        { updatedKeys: ['maxAutonomyLevel', 'sandbox'], revision: 1 },
        { updatedKeys: ['commandDenylist', 'maxAutonomyLevel'], revision: 2 },
      ]);
      expect(audit[1]).toMatchObject({
        actorId: org.members.manager.userId,
        before: { revision: 1, settings: { maxAutonomyLevel: 'low' } },
        after: { revision: 2, settings: { commandDenylist: ['rm -rf /'] } },
      });
    });

    it('names a user without a name by email', async () => {
      const org = await freshOrg();
      const m = await addMember(org, 'manager');
      await call('PUT', CONTROLS, { as: m.apiKey, body: { settings: { a: 1 } } });
      const history = await call('GET', HISTORY, { as: org.members.owner.apiKey });
      expect(history.body.changes[0].user).toEqual({ id: m.sub, email: m.email, name: m.email });
    });

    it('pages history by revision, newest first', async () => {
      const org = await freshOrg();
      const as = org.members.owner.apiKey;
      for (let i = 1; i <= 5; i++) await call('PUT', CONTROLS, { as, body: { settings: { step: i } } });
      const revisions: number[][] = [];
      let cursor: string | null = null;
      do {
        const res: { body: any } = await call('GET', `${HISTORY}?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { as });
        revisions.push(res.body.changes.map((c: { revision: number }) => c.revision));
        cursor = res.body.pagination.nextCursor;
        expect(res.body.pagination.hasMore).toBe(cursor !== null);
      } while (cursor);
      expect(revisions).toEqual([[5, 4], [3, 2], [1]]);
      // Another organization's history is its own.
      const other = await call('GET', HISTORY, { as: globex.members.owner.apiKey });
      expect(other.body.changes.every((c: { settings: { step?: number } }) => c.settings.step === undefined)).toBe(true);
      for (const q of ['limit=0', 'limit=101', 'cursor=abc', `cursor=${Buffer.from('{"r":"x"}').toString('base64url')}`]) {
        expect((await call('GET', `${HISTORY}?${q}`, { as })).status, q).toBe(400);
      }
    });

    it('gives concurrent changes distinct consecutive revisions', async () => {
      const org = await freshOrg();
      const as = org.members.owner.apiKey;
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => call('PUT', CONTROLS, { as, body: { settings: { writer: i } } })));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(results.map((r) => r.body.revision).sort()).toEqual([1, 2, 3, 4, 5, 6]);
      const changes = await db().enterpriseControlChange.findMany({ where: { organizationId: org.id } });
      expect(changes.map((c) => c.revision).sort()).toEqual([1, 2, 3, 4, 5, 6]);
      const current = await db().organization.findUniqueOrThrow({ where: { id: org.id } });
      expect(current.enterpriseRevision).toBe(6);
      expect(current.enterpriseSettings).toEqual(changes.find((c) => c.revision === 6)!.settings);
    });

    describe('custom model API keys', () => {
      const KEY = 'sk-house-0123456789abcd';
      const NEW_KEY = 'sk-house-rotated-zz9999';
      const house = { id: 'house', model: 'house-llm', baseUrl: 'http://127.0.0.1:9/v1' };
      const stored = async (orgId: string) => (await db().organization.findUniqueOrThrow({ where: { id: orgId } })).enterpriseSettings as any;
      /** The key a turn would call the model with. */
      const turnKey = async (orgId: string, id = 'custom:house') =>
        resolveModel(id, openCustomModelKeys(await stored(orgId), api.machines.secrets), {}, fetch).config.apiKey;
      /** Every place a settings document is written or answered, as one string to search. */
      const everywhere = async (org: OrgFixture) =>
        JSON.stringify([
          await stored(org.id),
          (await call('GET', CONTROLS, { as: org.members.owner.apiKey })).body,
          (await call('GET', HISTORY, { as: org.members.owner.apiKey })).body,
          await db().enterpriseControlChange.findMany({ where: { organizationId: org.id } }),
          await audits(org.id, 'managed_settings_change'),
        ]);

      it('seals the key: stored, answered, snapshotted and audited only masked; a GET sent back keeps it', async () => {
        const org = await freshOrg();
        const as = org.members.owner.apiKey;
        const put = await call('PUT', CONTROLS, {
          as,
          body: {
            settings: {
              customModels: [
                { ...house, apiKey: KEY },
                { id: 'local', model: 'm', baseUrl: 'http://x' },
              ],
            },
          },
        });
        expect(put.status, put.body.detail).toBe(200);
        expect(put.body).toEqual({
          revision: 1,
          settings: {
            customModels: [
              { ...house, apiKey: '••••abcd' },
              { id: 'local', model: 'm', baseUrl: 'http://x' },
            ],
          },
        });
        expect((await call('GET', CONTROLS, { as })).body).toEqual(put.body);
        expect((await call('GET', HISTORY, { as })).body.changes[0].settings).toEqual(put.body.settings);
        const [audit] = await audits(org.id, 'managed_settings_change');
        expect(audit).toMatchObject({ after: { settings: put.body.settings }, payload: { updatedKeys: ['customModels'] } });
        const raw = await stored(org.id);
        expect(raw.customModels[0].apiKeyCiphertext).toMatch(/^v1\./);
        expect(await turnKey(org.id)).toBe(KEY);
        expect(await turnKey(org.id, 'custom:local')).toBe('none');
        expect(await everywhere(org)).not.toContain(KEY);
        expect(JSON.stringify([(await call('GET', HISTORY, { as })).body, await audits(org.id, 'managed_settings_change')])).not.toContain('apiKeyCiphertext');

        // The answer sent back, or the same key in plain text, is no change.
        expect((await call('PUT', CONTROLS, { as, body: { settings: put.body.settings } })).body.revision).toBe(1);
        expect(
          (await call('PUT', CONTROLS, { as, body: { settings: { customModels: [{ ...house, apiKey: KEY }, put.body.settings.customModels[1]] } } })).body
            .revision,
        ).toBe(1);
        // Edited around the mask, or with apiKey left out, the stored key stays as it was.
        const edited = await call('PUT', CONTROLS, {
          as,
          body: { settings: { customModels: [{ ...put.body.settings.customModels[0], maxOutputTokens: 2048 }] } },
        });
        expect(edited.body).toEqual({ revision: 2, settings: { customModels: [{ ...house, apiKey: '••••abcd', maxOutputTokens: 2048 }] } });
        expect((await stored(org.id)).customModels[0].apiKeyCiphertext).toBe(raw.customModels[0].apiKeyCiphertext);
        const omitted = await call('PUT', CONTROLS, { as, body: { settings: { customModels: [house] } } });
        expect(omitted.body).toEqual({ revision: 3, settings: { customModels: [{ ...house, apiKey: '••••abcd' }] } });
        expect(await turnKey(org.id)).toBe(KEY);

        // A new key replaces it; null removes it.
        const rotated = await call('PUT', CONTROLS, { as, body: { settings: { customModels: [{ ...house, apiKey: NEW_KEY }] } } });
        expect(rotated.body).toEqual({ revision: 4, settings: { customModels: [{ ...house, apiKey: '••••9999' }] } });
        expect(await turnKey(org.id)).toBe(NEW_KEY);
        const removed = await call('PUT', CONTROLS, { as, body: { settings: { customModels: [{ ...house, apiKey: null }] } } });
        expect(removed.body).toEqual({ revision: 5, settings: { customModels: [house] } });
        expect(await stored(org.id)).toEqual({ customModels: [house] });
        expect(await turnKey(org.id)).toBe('none');
        const short = await call('PUT', CONTROLS, { as, body: { settings: { customModels: [{ ...house, apiKey: 'abc123' }] } } });
        expect(short.body.settings.customModels[0].apiKey).toBe('••••');
        const all = await everywhere(org);
        for (const secret of [KEY, NEW_KEY, 'abc123']) expect(all).not.toContain(secret);
      });

      it('answers 400 for a key it cannot take, changing nothing', async () => {
        const org = await freshOrg();
        const as = org.members.owner.apiKey;
        await call('PUT', CONTROLS, { as, body: { settings: { customModels: [{ ...house, apiKey: KEY }] } } });
        const before = await stored(org.id);
        const bad: [unknown, RegExp][] = [
          [{ ...house, apiKey: '••••zzzz' }, /customModels\[0\]\.apiKey .* masked key/],
          [{ ...house, id: 'renamed', apiKey: '••••abcd' }, /custom model "renamed" has no stored key/],
          [{ ...house, apiKey: 42 }, /customModels\[0\]\.apiKey must be a non-empty string, null to remove/],
          [{ ...house, apiKey: '' }, /must be a non-empty string/],
          [{ ...house, apiKeyCiphertext: before.customModels[0].apiKeyCiphertext }, /apiKeyCiphertext is written by the server/],
        ];
        for (const [entry, detail] of bad) {
          const res = await call('PUT', CONTROLS, { as, body: { settings: { customModels: [entry] } } });
          expect(res.status, JSON.stringify(entry)).toBe(400);
          expect(res.body.detail).toMatch(detail);
        }
        expect(await stored(org.id)).toEqual(before);
        expect((await call('GET', CONTROLS, { as })).body.revision).toBe(1);
        expect(await db().enterpriseControlChange.count({ where: { organizationId: org.id } })).toBe(1);
        expect(await audits(org.id, 'managed_settings_change')).toHaveLength(1);
      });

      it('masks keys stored before sealing on every read, seals them on the next PUT, and the migration masks old copies', async () => {
        const org = await freshOrg();
        const as = org.members.owner.apiKey;
        const legacy = { customModels: [{ ...house, apiKey: KEY }] };
        const now = clock.now();
        await db().organization.update({ where: { id: org.id }, data: { enterpriseSettings: legacy, enterpriseRevision: 1 } });
        await db().enterpriseControlChange.create({
          data: {
            id: newId('ecc'),
            organizationId: org.id,
            revision: 1,
            settings: legacy,
            userId: org.members.owner.userId,
            userEmail: org.members.owner.email,
            createdAt: now,
          },
        });
        await recordAudit(db(), {
          organizationId: org.id,
          eventType: 'managed_settings_change',
          source: 'public_api_v0',
          target: { organizationId: org.id },
          before: { revision: 0, settings: {} },
          after: { revision: 1, settings: legacy },
          at: now,
        });
        const masked = { customModels: [{ ...house, apiKey: '••••abcd' }] };
        const got = await call('GET', CONTROLS, { as });
        expect(got.body).toEqual({ revision: 1, settings: masked });
        expect((await call('GET', HISTORY, { as })).body.changes[0].settings).toEqual(masked);
        expect(await turnKey(org.id)).toBe(KEY);

        const migration = fs.readFileSync(new URL('../../prisma/migrations/20261124000000_mask_custom_model_keys/migration.sql', import.meta.url), 'utf8');
        await withSqlConnection(api.db, (conn) => conn.exec(migration));
        expect((await db().enterpriseControlChange.findFirstOrThrow({ where: { organizationId: org.id } })).settings).toEqual(masked);
        expect((await audits(org.id, 'managed_settings_change'))[0]!.after).toEqual({ revision: 1, settings: masked });

        // The GET sent back changes nothing but the storage: the key is sealed, the revision stays.
        expect((await call('PUT', CONTROLS, { as, body: { settings: got.body.settings } })).body).toEqual(got.body);
        expect((await stored(org.id)).customModels[0].apiKeyCiphertext).toMatch(/^v1\./);
        expect(await db().enterpriseControlChange.count({ where: { organizationId: org.id } })).toBe(1);
        expect(await turnKey(org.id)).toBe(KEY);
        expect(await everywhere(org)).not.toContain(KEY);
      });

      it('seals keys stored in plain text when the server starts, without a revision, and then finds nothing to do', async () => {
        const org = await freshOrg();
        const legacy = { customModels: [{ ...house, apiKey: KEY }], other: { kept: true } };
        await db().organization.update({ where: { id: org.id }, data: { enterpriseSettings: legacy, enterpriseRevision: 1 } });
        const seal = () => sealStoredCustomModelKeys({ db: db(), secrets: api.machines.secrets });
        await seal();
        const sealed = await stored(org.id);
        expect(JSON.stringify(sealed)).not.toContain(KEY);
        expect(sealed).toMatchObject({
          customModels: [{ ...house, apiKey: '••••abcd', apiKeyCiphertext: expect.stringMatching(/^v1\./) }],
          other: { kept: true },
        });
        expect(await turnKey(org.id)).toBe(KEY);
        expect((await call('GET', CONTROLS, { as: org.members.owner.apiKey })).body.revision).toBe(1);
        await seal();
        expect(await stored(org.id)).toEqual(sealed);
      });
    });

    it('rejects malformed bodies with 400, and service accounts with 403, changing nothing', async () => {
      const org = await freshOrg();
      const as = org.members.owner.apiKey;
      for (const body of [{}, { settings: [] }, { settings: 'x' }, { settings: null }, { settings: {}, revision: 3 }, []]) {
        expect((await call('PUT', CONTROLS, { as, body })).status, JSON.stringify(body)).toBe(400);
      }
      const sa = await call('PUT', CONTROLS, { as: org.serviceAccount.apiKey, body: { settings: { a: 1 } } });
      expect(sa.status).toBe(403);
      expect((await call('GET', CONTROLS, { as })).body).toEqual({ revision: 0, settings: {} });
      expect(await db().enterpriseControlChange.count({ where: { organizationId: org.id } })).toBe(0);
      expect(await audits(org.id, 'managed_settings_change')).toHaveLength(0);
    });
  });

  it('documents every organization endpoint in OpenAPI with its error statuses', async () => {
    const doc = (await call('GET', '/api/v0/openapi.json')).body;
    const expected: Record<string, string[]> = {
      'get /api/v0/organization/users': ['400', '401', '403', '500'],
      'delete /api/v0/organization/users': ['400', '401', '403', '404', '409', '500'],
      'post /api/v0/organization/users/invite': ['400', '401', '403', '409', '500'],
      'get /api/v0/organization/usage/limits/global': ['401', '403', '500'],
      'put /api/v0/organization/usage/limits/global': ['400', '401', '403', '500'],
      'get /api/v0/organization/usage/limits/users': ['401', '403', '500'],
      'put /api/v0/organization/usage/limits/users': ['400', '401', '403', '500'],
      'get /api/v0/organization/enterprise-controls': ['401', '403', '500'],
      'put /api/v0/organization/enterprise-controls': ['400', '401', '403', '500'],
      'get /api/v0/organization/enterprise-controls/history': ['400', '401', '403', '500'],
      'get /api/v0/organization/turns': ['401', '403', '500'],
    };
    for (const [key, statuses] of Object.entries(expected)) {
      const [method, path] = key.split(' ') as [string, string];
      const op = doc.paths[path]?.[method];
      expect(op, key).toBeDefined();
      expect(
        Object.keys(op.responses)
          .filter((s) => Number(s) >= 400)
          .sort(),
        key,
      ).toEqual(statuses);
    }
  });
});
