import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/lib/clock.ts';
import { newId } from '../../src/lib/ids.ts';
import { syncGitIntegrations } from '../../src/modules/integrations/seed.ts';
import { GIT_CREDENTIALS_FILE } from '../../src/repos/git-credentials.ts';
import { startTestApi, type OrgFixture, type TestApi } from '../support/api.ts';
import { freePort } from '../support/http.ts';
import { isRoot, sshdMissing, startSshd, type TestSshd } from '../support/sshd.ts';
import { BACKENDS } from '../support/test-db.ts';
import { skipWithout } from '../support/parts.ts';

const BASE = '/api/v0/service-accounts';
const MINUTE = 60_000;
const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');
const sshdMissingReason = sshdMissing();
const withoutSshd = skipWithout("the tests of deleting an account's computers", sshdMissingReason);

describe.each(BACKENDS)('service accounts on %s', (backend) => {
  const clock = fixedClock(new Date());
  let api: TestApi;
  let acme: OrgFixture;
  let globex: OrgFixture;
  let manager: string;
  let owner: string;

  beforeAll(async () => {
    api = await startTestApi(backend, { clock });
    ({ acme, globex } = api);
    manager = acme.members.manager.apiKey;
    owner = acme.members.owner.jwt;
  });
  afterAll(() => api?.close());

  const db = () => api.db.prisma;

  async function createAccount(body: Record<string, unknown> = {}, as = manager) {
    const res = await api.call('POST', BASE, { as, body: { name: newId('sa-name'), status: 'active', ...body } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.serviceAccount as { id: string; name: string; status: string };
  }

  async function createKey(saId: string, body: Record<string, unknown> = {}, as = manager) {
    const res = await api.call('POST', `${BASE}/${saId}/api-keys`, { as, body: { name: newId('key-name'), ...body } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.apiKey as { id: string; value: string; fingerprint: string; name: string; expiresAt?: number };
  }

  /** The status an authenticated, unguarded endpoint answers with this key: 200 or 401. */
  async function authStatus(key: string) {
    return (await api.call('GET', '/api/v0/computers/providers', { as: key })).status;
  }

  /** Everything this module can change, to prove a refused request changed nothing. */
  async function snapshot() {
    const byId = { orderBy: { id: 'asc' as const } };
    const [accounts, keys, audits, credentials] = await Promise.all([
      db().serviceAccount.findMany(byId),
      db().apiKey.findMany(byId),
      db().auditRecord.findMany(byId),
      db().gitCredential.findMany(byId),
    ]);
    return { accounts, keys, audits, credentials };
  }

  async function auditsFor(target: string) {
    const rows = await db().auditRecord.findMany({ orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    return rows.filter((r) => Object.values(r.target as Record<string, unknown>).includes(target));
  }

  function expectError(res: { status: number; body: any }, status: number, detail?: RegExp) {
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) });
    if (detail) expect(res.body.detail).toMatch(detail);
  }

  describe('service account CRUD', () => {
    it('creates an account (201), stores it and audits the creation in the wire shape', async () => {
      const at = clock.now().getTime();
      const res = await api.call('POST', BASE, {
        as: manager,
        body: { name: 'ci-bot', description: 'runs CI', status: 'inactive' },
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        serviceAccount: {
          id: expect.stringMatching(/^sa_/),
          name: 'ci-bot',
          description: 'runs CI',
          status: 'inactive',
          createdBy: acme.members.manager.userId,
          teamIds: [],
          createdAt: at,
          updatedAt: at,
        },
      });
      const id = res.body.serviceAccount.id;
      const row = await db().serviceAccount.findUniqueOrThrow({ where: { id } });
      expect(row).toMatchObject({ organizationId: acme.id, name: 'ci-bot', status: 'inactive' });
      const [audit, ...more] = await auditsFor(id);
      expect(more).toHaveLength(0);
      expect(audit).toMatchObject({
        organizationId: acme.id,
        eventType: 'service_account_change',
        source: 'public_api_v0',
        actorKind: 'human',
        actorId: acme.members.manager.userId,
        actorEmail: acme.members.manager.email,
        payload: { intent: 'created', toStatus: 'inactive' },
        after: res.body.serviceAccount,
      });
      expect(audit!.before).toBeNull();
    });

    it('refuses invalid bodies with 400 and stores nothing', async () => {
      const before = await snapshot();
      const bodies: [unknown, RegExp][] = [
        [{ status: 'active' }, /name/],
        [{ name: '', status: 'active' }, /name/],
        [{ name: '   ', status: 'active' }, /blank/],
        [{ name: 'x'.repeat(129), status: 'active' }, /128/],
        [{ name: 'a\nb', status: 'active' }, /control/],
        [{ name: 42, status: 'active' }, /name/],
        [{ name: 'no-status' }, /status/],
        [{ name: 'deleted-status', status: 'deleted' }, /status/],
        [{ name: 'extra', status: 'active', teamId: 'x' }, /teamId/],
        [{ name: 'long-description', status: 'active', description: 'd'.repeat(1025) }, /description/],
        [[], /body/],
      ];
      for (const [body, detail] of bodies) {
        const res = await api.call('POST', BASE, { as: manager, body });
        expectError(res, 400, detail);
        expect(res.body.metadata.errors.length, JSON.stringify(body)).toBeGreaterThan(0);
      }
      expectError(await api.call('POST', BASE, { as: manager, rawBody: '{"name":' }), 400, /JSON/);
      expect(await snapshot()).toEqual(before);
    });

    it('accepts names of exactly 1 and 128 characters', async () => {
      await createAccount({ name: 'x' });
      await createAccount({ name: 'y'.repeat(128) });
    });

    it('answers 409 for a name in use in the organization, not for one in use elsewhere', async () => {
      const first = await createAccount({ name: 'deploy-bot' });
      const before = await snapshot();
      const dup = await api.call('POST', BASE, { as: owner, body: { name: 'deploy-bot', status: 'inactive' } });
      expectError(dup, 409, new RegExp(`deploy-bot.*${first.id}`));
      expect(await snapshot()).toEqual(before);
      const elsewhere = await api.call('POST', BASE, {
        as: globex.members.manager.apiKey,
        body: { name: 'deploy-bot', status: 'active' },
      });
      expect(elsewhere.status).toBe(201);
    });

    it('lets only one of several concurrent creates of one name succeed', async () => {
      const name = newId('race');
      const results = await Promise.all(Array.from({ length: 6 }, () => api.call('POST', BASE, { as: manager, body: { name, status: 'active' } })));
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
      expect(await db().serviceAccount.count({ where: { organizationId: acme.id, name } })).toBe(1);
    });

    it("lists the organization's accounts newest first, without other organizations' or deleted ones", async () => {
      clock.advance(1);
      const older = await createAccount();
      clock.advance(1);
      const newer = await createAccount();
      clock.advance(1);
      const gone = await createAccount();
      expect((await api.call('DELETE', `${BASE}/${gone.id}`, { as: manager })).status).toBe(200);

      const res = await api.call('GET', BASE, { as: manager });
      expect(res.status).toBe(200);
      const ids = (res.body.serviceAccounts as { id: string }[]).map((a) => a.id);
      expect(ids.indexOf(newer.id)).toBeGreaterThanOrEqual(0);
      expect(ids.indexOf(newer.id)).toBeLessThan(ids.indexOf(older.id));
      expect(ids).toContain(acme.serviceAccount.id);
      expect(ids).not.toContain(gone.id);
      expect(ids).not.toContain(globex.serviceAccount.id);
      const rows = await db().serviceAccount.findMany({ where: { organizationId: acme.id, status: { not: 'deleted' } } });
      expect(ids).toHaveLength(rows.length);
      expect(res.body.serviceAccounts.find((a: { id: string }) => a.id === older.id)).toEqual(older);
    });

    it('gets one account; another organization sees 404, never 403', async () => {
      const sa = await createAccount({ description: 'd' });
      const res = await api.call('GET', `${BASE}/${sa.id}`, { as: owner });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ serviceAccount: sa });
      expectError(await api.call('GET', `${BASE}/${sa.id}`, { as: globex.members.owner.apiKey }), 404, new RegExp(sa.id));
      expectError(await api.call('GET', `${BASE}/sa_doesnotexist`, { as: manager }), 404);
    });

    it('changes description and status, audits each change, and leaves no-op requests unaudited', async () => {
      const sa = await createAccount({ description: 'old' });
      clock.advance(1000);
      const at = clock.now().getTime();
      const described = await api.call('PATCH', `${BASE}/${sa.id}`, { as: manager, body: { description: 'new' } });
      expect(described.status).toBe(200);
      expect(described.body.serviceAccount).toEqual({ ...sa, description: 'new', updatedAt: at });

      clock.advance(1);
      const deactivated = await api.call('PATCH', `${BASE}/${sa.id}`, { as: owner, body: { status: 'inactive' } });
      expect(deactivated.status).toBe(200);
      expect(deactivated.body.serviceAccount).toMatchObject({ status: 'inactive', description: 'new' });
      expect((await db().serviceAccount.findUniqueOrThrow({ where: { id: sa.id } })).status).toBe('inactive');

      const before = await snapshot();
      expect((await api.call('PATCH', `${BASE}/${sa.id}`, { as: manager, body: {} })).status).toBe(200);
      expect((await api.call('PATCH', `${BASE}/${sa.id}`, { as: manager, body: { status: 'inactive' } })).status).toBe(200);
      expect(await snapshot()).toEqual(before);

      const audits = (await auditsFor(sa.id)).map((a) => ({ payload: a.payload, before: a.before, after: a.after }));
      expect(audits).toEqual([
        expect.objectContaining({ payload: { intent: 'created', toStatus: 'active' } }),
        { payload: { intent: 'updated', toStatus: 'active' }, before: sa, after: described.body.serviceAccount },
        {
          payload: { intent: 'status_changed', fromStatus: 'active', toStatus: 'inactive' },
          before: described.body.serviceAccount,
          after: deactivated.body.serviceAccount,
        },
      ]);
    });

    it('refuses to rename (400), bad statuses and fields (400), and changes nothing', async () => {
      const sa = await createAccount();
      const before = await snapshot();
      const bodies: [unknown, RegExp][] = [
        [{ name: 'renamed' }, /name is immutable/],
        [{ name: 'renamed', description: 'x' }, /name is immutable/],
        [{ status: 'deleted' }, /status/],
        [{ status: 'paused' }, /status/],
        [{ description: 7 }, /description/],
        [{ colour: 'blue' }, /colour/],
      ];
      for (const [body, detail] of bodies) {
        expectError(await api.call('PATCH', `${BASE}/${sa.id}`, { as: manager, body }), 400, detail);
      }
      expect(await snapshot()).toEqual(before);
    });

    it("answers 404 to a PATCH of another organization's account and changes nothing", async () => {
      const before = await snapshot();
      const res = await api.call('PATCH', `${BASE}/${globex.serviceAccount.id}`, { as: manager, body: { status: 'inactive' } });
      expectError(res, 404);
      expect(await snapshot()).toEqual(before);
    });

    it('stops the keys of an inactive account until it is active again', async () => {
      const sa = await createAccount();
      const key = await createKey(sa.id);
      expect(await authStatus(key.value)).toBe(200);
      await api.call('PATCH', `${BASE}/${sa.id}`, { as: manager, body: { status: 'inactive' } });
      const refused = await api.call('GET', '/api/v0/computers/providers', { as: key.value });
      expectError(refused, 401, /inactive/);
      await api.call('PATCH', `${BASE}/${sa.id}`, { as: manager, body: { status: 'active' } });
      expect(await authStatus(key.value)).toBe(200);
    });

    it('accepts key creation for an inactive account', async () => {
      const sa = await createAccount({ status: 'inactive' });
      const key = await createKey(sa.id);
      expect(await authStatus(key.value)).toBe(401);
    });
  });

  describe('delete', () => {
    it('soft-deletes: revokes every key, ends grace windows, purges git credentials, audits the outcome', async () => {
      const sa = await createAccount();
      const keep = await createKey(sa.id);
      const rotated = await createKey(sa.id);
      const rotation = await api.call('POST', `${BASE}/${sa.id}/api-keys/${rotated.id}/rotate`, {
        as: manager,
        body: { gracePeriodMinutes: 10 },
      });
      expect(rotation.status).toBe(200);
      const replacement = rotation.body.apiKey.value as string;
      expect(await authStatus(rotated.value)).toBe(200);
      const other = await createAccount();
      for (const serviceAccountId of [sa.id, sa.id, other.id]) {
        await db().gitCredential.create({
          data: { id: newId('gc'), organizationId: acme.id, serviceAccountId, integration: 'github', tokenCiphertext: 'c' },
        });
      }

      const res = await api.call('DELETE', `${BASE}/${sa.id}`, { as: manager });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: sa.id, deleted: true });

      for (const value of [keep.value, rotated.value, replacement]) expect(await authStatus(value)).toBe(401);
      const keys = await db().apiKey.findMany({ where: { serviceAccountId: sa.id } });
      expect(keys).toHaveLength(3);
      for (const k of keys) expect(k.revokedAt).not.toBeNull();
      expect(await db().gitCredential.count({ where: { serviceAccountId: sa.id } })).toBe(0);
      expect(await db().gitCredential.count({ where: { serviceAccountId: other.id } })).toBe(1);
      expect((await db().serviceAccount.findUniqueOrThrow({ where: { id: sa.id } })).status).toBe('deleted');
      const audit = (await auditsFor(sa.id)).find((a) => (a.payload as { intent: string }).intent === 'deleted');
      expect(audit).toMatchObject({
        eventType: 'service_account_change',
        source: 'public_api_v0',
        payload: { intent: 'deleted', fromStatus: 'active', toStatus: 'deleted', keysRevoked: 2, graceWindowsEnded: 1, gitCredentialsPurged: 2 },
        before: { status: 'active' },
        after: { status: 'deleted' },
      });
    });

    it("schedules the teardown of each managed computer it owns, in the delete's transaction", async () => {
      const sa = await createAccount();
      const managed = await db().computer.create({
        data: {
          id: newId('cmp'),
          organizationId: acme.id,
          ownerKind: 'service',
          ownerId: sa.id,
          name: 'robot-managed',
          liveName: 'robot-managed',
          providerType: 'local',
          status: 'active',
          powerState: 'running',
          sshKeyCiphertext: 'sealed',
          createdBy: acme.members.manager.userId,
        },
      });
      const res = await api.call('DELETE', `${BASE}/${sa.id}`, { as: manager });
      expect(res.status).toBe(200);

      expect(await db().computer.findUniqueOrThrow({ where: { id: managed.id } })).toMatchObject({
        deletedAt: clock.now(),
        liveName: null,
        operation: 'teardown',
        sshKeyCiphertext: null,
      });
      expect(await db().provisioningStep.findMany({ where: { computerId: managed.id } })).toEqual([
        expect.objectContaining({ id: 'teardown', status: 'pending' }),
      ]);
      const jobs = await db().$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'computers.stack' AND data->>'computerId' = $1 AND data->>'operation' = 'teardown'`,
        managed.id,
      );
      expect(jobs[0]!.n).toBe(1);
      const audit = (await auditsFor(sa.id)).find((a) => (a.payload as { intent: string }).intent === 'deleted');
      expect(audit?.payload).toMatchObject({ computersDeleted: [managed.id] });
    });

    it('keeps a deleted account readable but frozen, and a second DELETE changes nothing', async () => {
      const sa = await createAccount();
      const key = await createKey(sa.id);
      await api.call('DELETE', `${BASE}/${sa.id}`, { as: manager });
      const before = await snapshot();

      const got = await api.call('GET', `${BASE}/${sa.id}`, { as: manager });
      expect(got.status).toBe(200);
      expect(got.body.serviceAccount.status).toBe('deleted');
      const keys = await api.call('GET', `${BASE}/${sa.id}/api-keys`, { as: manager });
      expect(keys.status).toBe(200);
      expect(keys.body.apiKeys).toEqual([expect.objectContaining({ id: key.id, isRevoked: true })]);

      expectError(await api.call('PATCH', `${BASE}/${sa.id}`, { as: manager, body: { status: 'active' } }), 409, /deleted/);
      expectError(await api.call('POST', `${BASE}/${sa.id}/api-keys`, { as: manager, body: { name: 'again' } }), 409, /deleted/);
      expectError(await api.call('POST', `${BASE}/${sa.id}/api-keys/${key.id}/rotate`, { as: manager }), 409, /deleted/);
      expect((await api.call('POST', `${BASE}/${sa.id}/api-keys/${key.id}/revoke`, { as: manager })).status).toBe(204);
      expectError(await api.call('POST', BASE, { as: manager, body: { name: sa.name, status: 'active' } }), 409, /deleted service account/);
      const again = await api.call('DELETE', `${BASE}/${sa.id}`, { as: owner });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ id: sa.id, deleted: true });
      expect(await snapshot()).toEqual(before);
    });

    it("answers 404 for another organization's or an unknown account and deletes nothing", async () => {
      const before = await snapshot();
      expectError(await api.call('DELETE', `${BASE}/${globex.serviceAccount.id}`, { as: owner }), 404);
      expectError(await api.call('DELETE', `${BASE}/sa_unknown`, { as: owner }), 404);
      expect(await snapshot()).toEqual(before);
      expect(await authStatus(globex.serviceAccount.apiKey)).toBe(200);
    });
  });

  describe.skipIf(withoutSshd)('delete, with the computers the account owns', () => {
    let sshd: TestSshd;
    beforeAll(async () => {
      if (sshdMissingReason) throw new Error(sshdMissingReason);
      // Deleting an account removes git credentials from its machines' user: not the user other files' machines share.
      sshd = await startSshd({ user: 'agentplane-ssh-sa' });
      const key = await api.call('GET', '/api/v0/computers/ssh-public-key', { as: manager });
      sshd.authorizeKey(key.body.publicKey);
    });
    afterAll(() => sshd?.stop());

    /** A byom computer on the test sshd, owned by the service account or, without one, by the manager. */
    async function register(name: string, serviceAccountId?: string) {
      const res = await api.call('POST', '/api/v0/computers', {
        as: manager,
        body: {
          name,
          provider: 'byom',
          remoteUser: sshd.username,
          connection: { host: sshd.host, port: sshd.port },
          hostId: randomUUID(),
          ...(serviceAccountId ? { serviceAccountId } : {}),
        },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body as { id: string };
    }
    const computerStatus = async (id: string) => (await api.call('GET', `/api/v0/computers/${id}`, { as: manager })).status;
    const deletions = async (computerId: string) =>
      (await auditsFor(computerId)).filter((a) => a.eventType === 'computer_change' && (a.payload as { action: string }).action === 'deleted');

    it('deletes each computer it owns as DELETE /computers/{id} does, and lists them in its audit record', async () => {
      const sa = await createAccount();
      const other = await createAccount();
      const owned = [await register('robot-box-1', sa.id), await register('robot-box-2', sa.id)];
      const deletedBefore = await register('robot-box-3', sa.id);
      const othersBox = await register('robot-box-1', other.id);
      const managersBox = await register('robot-box-1');
      expect((await api.call('DELETE', `/api/v0/computers/${deletedBefore.id}`, { as: manager })).status).toBe(204);

      const res = await api.call('DELETE', `${BASE}/${sa.id}`, { as: owner });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: sa.id, deleted: true });

      for (const c of [...owned, deletedBefore]) expect(await computerStatus(c.id)).toBe(404);
      for (const c of [othersBox, managersBox]) expect(await computerStatus(c.id)).toBe(200);
      const stored = await db().computer.findMany({ where: { id: { in: owned.map((c) => c.id) } } });
      expect(stored).toHaveLength(2);
      for (const c of stored) {
        expect(c).toMatchObject({ deletedAt: clock.now(), liveName: null, liveHostId: null, ownerId: sa.id });
      }
      const audit = (await auditsFor(sa.id)).find((a) => (a.payload as { intent: string }).intent === 'deleted');
      expect(audit?.payload).toMatchObject({ intent: 'deleted', computersDeleted: owned.map((c) => c.id).sort() });
      // Each computer's own record is the one the computers API writes, by the caller of this DELETE.
      for (const c of owned) {
        expect(await deletions(c.id)).toEqual([
          expect.objectContaining({ source: 'public_api_v0', actorKind: 'human', actorId: acme.members.owner.userId, payload: { action: 'deleted' } }),
        ]);
      }
      // The computer deleted before is neither deleted nor recorded again.
      expect(await deletions(deletedBefore.id)).toHaveLength(1);
      expect(await api.call('DELETE', `${BASE}/${sa.id}`, { as: owner })).toMatchObject({ status: 200 });
      expect(await deletions(owned[0]!.id)).toHaveLength(1);
    });

    // Not as another user: the test machine's user would be the one running the tests, whose own git configuration it edits.
    it.runIf(isRoot)('removes the git credentials refresh wrote onto its machines, best effort, and audits how each went', async () => {
      const sa = await createAccount();
      const reachable = await register('robot-creds', sa.id);
      // A registered machine that has gone away since: nothing listens on its port any more.
      const gone = await db().computer.create({
        data: {
          id: newId('cmp'),
          organizationId: acme.id,
          ownerKind: 'service',
          ownerId: sa.id,
          name: 'robot-gone',
          liveName: 'robot-gone',
          providerType: 'byom',
          status: 'active',
          connectionType: 'direct',
          sshHost: '127.0.0.1',
          sshPort: await freePort(),
          remoteUser: sshd.username,
          createdBy: acme.members.manager.userId,
        },
      });
      await syncGitIntegrations(db(), api.machines.secrets, [
        { organization: acme.id, host: 'git.example.com', username: 'x-access-token', token: 'tok-robot' },
      ]);
      try {
        expect((await api.call('POST', `/api/v0/computers/${reachable.id}/refresh`, { as: manager })).body).toEqual({ configured: 1 });
        const home = execFileSync('getent', ['passwd', sshd.username], { encoding: 'utf8' }).split(':')[5]!;
        const file = path.join(home, GIT_CREDENTIALS_FILE);
        expect(fs.readFileSync(file, 'utf8')).toContain('tok-robot');

        const res = await api.call('DELETE', `${BASE}/${sa.id}`, { as: manager });
        expect(res.status).toBe(200);
        expect(fs.existsSync(file)).toBe(false);
        const purge = (await auditsFor(sa.id)).find((a) => (a.payload as { intent: string }).intent === 'machine_git_credentials_purged');
        expect(purge).toMatchObject({ eventType: 'service_account_change', actorId: acme.members.manager.userId });
        expect(purge?.payload).toEqual({
          intent: 'machine_git_credentials_purged',
          machines: expect.arrayContaining([
            { computerId: reachable.id, outcome: 'purged' },
            { computerId: gone.id, outcome: 'failed', error: expect.stringMatching(/refused|ECONNREFUSED|connect/i) },
          ]),
        });
        expect((purge?.payload as { machines: unknown[] }).machines).toHaveLength(2);
      } finally {
        await syncGitIntegrations(db(), api.machines.secrets, []);
      }
    });

    it('answers 200 for a committed delete even when the record of its machines cannot be written', async () => {
      const sa = await createAccount();
      await register('robot-unrecorded', sa.id);
      await db().$executeRawUnsafe(`CREATE FUNCTION refuse_purge_audit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.payload->>'intent' = 'machine_git_credentials_purged' THEN RAISE EXCEPTION 'refused (test)'; END IF; RETURN NEW; END $$`);
      await db().$executeRawUnsafe(`CREATE TRIGGER refuse_purge_audit BEFORE INSERT ON audit_records FOR EACH ROW EXECUTE FUNCTION refuse_purge_audit()`);
      try {
        const res = await api.call('DELETE', `${BASE}/${sa.id}`, { as: manager });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ id: sa.id, deleted: true });
      } finally {
        await db().$executeRawUnsafe(`DROP TRIGGER refuse_purge_audit ON audit_records`);
        await db().$executeRawUnsafe(`DROP FUNCTION refuse_purge_audit()`);
      }
      expect((await db().serviceAccount.findUniqueOrThrow({ where: { id: sa.id } })).status).toBe('deleted');
      const intents = (await auditsFor(sa.id)).map((a) => (a.payload as { intent: string }).intent);
      expect(intents).toContain('deleted');
      expect(intents).not.toContain('machine_git_credentials_purged');
    });
  });

  describe('API keys', () => {
    it('issues a key (201) whose value is shown once and stored only as a hash', async () => {
      const sa = await createAccount();
      const expiresAt = clock.now().getTime() + 24 * 60 * MINUTE;
      const res = await api.call('POST', `${BASE}/${sa.id}/api-keys`, { as: owner, body: { name: 'deploy', expiresAt } });
      expect(res.status).toBe(201);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const key = res.body.apiKey;
      expect(res.body).toEqual({
        apiKey: {
          id: expect.stringMatching(/^key_/),
          value: expect.stringMatching(/^apk_[0-9a-z]{40}$/),
          fingerprint: key.value.slice(-6),
          name: 'deploy',
          expiresAt,
        },
      });

      const row = await db().apiKey.findUniqueOrThrow({ where: { id: key.id } });
      expect(row).toMatchObject({
        serviceAccountId: sa.id,
        organizationId: acme.id,
        secretHash: sha256(key.value),
        fingerprint: key.fingerprint,
        userId: null,
        revokedAt: null,
      });
      expect(row.expiresAt?.getTime()).toBe(expiresAt);
      expect(JSON.stringify(row)).not.toContain(key.value);
      const audits = await auditsFor(key.id);
      expect(audits).toHaveLength(1);
      expect(audits[0]).toMatchObject({ eventType: 'api_key_lifecycle_change', source: 'public_api_v0', payload: { intent: 'created' } });
      expect(JSON.stringify(audits)).not.toContain(key.value.slice(4));
      expect(JSON.stringify(audits)).not.toContain(row.secretHash);

      const list = await api.call('GET', `${BASE}/${sa.id}/api-keys`, { as: manager });
      expect(list.status).toBe(200);
      expect(list.body).toEqual({
        apiKeys: [{ id: key.id, name: 'deploy', fingerprint: key.fingerprint, createdAt: clock.now().getTime(), expiresAt, isRevoked: false }],
      });
      expect(JSON.stringify(list.body)).not.toContain(key.value);
      expect(await authStatus(key.value)).toBe(200);
    });

    it('lists all keys of the account, newest first, revoked included', async () => {
      const sa = await createAccount();
      const first = await createKey(sa.id);
      clock.advance(1);
      const second = await createKey(sa.id);
      await api.call('POST', `${BASE}/${sa.id}/api-keys/${first.id}/revoke`, { as: manager });
      const res = await api.call('GET', `${BASE}/${sa.id}/api-keys`, { as: manager });
      expect(res.body.apiKeys.map((k: { id: string }) => k.id)).toEqual([second.id, first.id]);
      expect(res.body.apiKeys[1]).toMatchObject({ isRevoked: true, revokedAt: clock.now().getTime() });
      expect(res.body.apiKeys[0]).not.toHaveProperty('revokedAt');
      expect(res.body.apiKeys[0]).not.toHaveProperty('expiresAt');
    });

    it('refuses invalid key bodies with 400 and stores nothing', async () => {
      const sa = await createAccount();
      const before = await snapshot();
      const now = clock.now().getTime();
      const bodies: [unknown, RegExp][] = [
        [{}, /name/],
        [{ name: '' }, /name/],
        [{ name: 'k'.repeat(129) }, /128/],
        [{ name: ' ' }, /blank/],
        [{ name: 'k', expiresAt: 0 }, /expiresAt/],
        [{ name: 'k', expiresAt: -5 }, /expiresAt/],
        [{ name: 'k', expiresAt: now + 0.5 }, /expiresAt/],
        [{ name: 'k', expiresAt: String(now + MINUTE) }, /expiresAt/],
        [{ name: 'k', expiresAt: now }, /not in the future/],
        [{ name: 'k', expiresAt: now - MINUTE }, /not in the future/],
        [{ name: 'k', scopes: [] }, /scopes/],
      ];
      for (const [body, detail] of bodies) {
        expectError(await api.call('POST', `${BASE}/${sa.id}/api-keys`, { as: manager, body }), 400, detail);
      }
      expect(await snapshot()).toEqual(before);
    });

    it('keeps names of live keys unique per account (409); revoked and expired keys free their name', async () => {
      const sa = await createAccount();
      const other = await createAccount();
      const first = await createKey(sa.id, { name: 'ci' });
      const before = await snapshot();
      expectError(await api.call('POST', `${BASE}/${sa.id}/api-keys`, { as: manager, body: { name: 'ci' } }), 409, new RegExp(first.id));
      expect(await snapshot()).toEqual(before);
      await createKey(other.id, { name: 'ci' });

      await api.call('POST', `${BASE}/${sa.id}/api-keys/${first.id}/revoke`, { as: manager });
      const second = await createKey(sa.id, { name: 'ci', expiresAt: clock.now().getTime() + MINUTE });
      clock.advance(MINUTE);
      expect(await authStatus(second.value)).toBe(401);
      await createKey(sa.id, { name: 'ci' });
    });

    it('lets only one of several concurrent creates of one key name succeed', async () => {
      const sa = await createAccount();
      const results = await Promise.all(
        Array.from({ length: 6 }, () => api.call('POST', `${BASE}/${sa.id}/api-keys`, { as: manager, body: { name: 'same' } })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
      expect(await db().apiKey.count({ where: { serviceAccountId: sa.id, name: 'same' } })).toBe(1);
    });

    it('answers 401 for an expired key from its expiry on', async () => {
      const sa = await createAccount();
      const key = await createKey(sa.id, { expiresAt: clock.now().getTime() + MINUTE });
      clock.advance(MINUTE - 1);
      expect(await authStatus(key.value)).toBe(200);
      clock.advance(1);
      expectError(await api.call('GET', '/api/v0/computers/providers', { as: key.value }), 401, /expired/);
    });

    it('answers 404 for keys of another account, another organization, a person, or unknown ones', async () => {
      const sa = await createAccount();
      const mine = await createKey(sa.id);
      const sibling = await createAccount();
      const personal = await db().apiKey.findFirstOrThrow({ where: { userId: acme.members.manager.userId } });
      const globexKey = await db().apiKey.findFirstOrThrow({ where: { serviceAccountId: globex.serviceAccount.id } });
      const before = await snapshot();
      const paths = [
        `${BASE}/${sibling.id}/api-keys/${mine.id}`,
        `${BASE}/${sa.id}/api-keys/${personal.id}`,
        `${BASE}/${sa.id}/api-keys/key_unknown`,
        `${BASE}/${globex.serviceAccount.id}/api-keys/${globexKey.id}`,
        `${BASE}/${sa.id}/api-keys/${globexKey.id}`,
      ];
      for (const path of paths) {
        expectError(await api.call('POST', `${path}/revoke`, { as: manager }), 404);
        expectError(await api.call('POST', `${path}/rotate`, { as: manager, body: {} }), 404);
      }
      expectError(await api.call('GET', `${BASE}/${globex.serviceAccount.id}/api-keys`, { as: manager }), 404);
      expectError(await api.call('POST', `${BASE}/${globex.serviceAccount.id}/api-keys`, { as: manager, body: { name: 'x' } }), 404);
      expectError(await api.call('GET', `${BASE}/sa_unknown/api-keys`, { as: manager }), 404);
      expect(await snapshot()).toEqual(before);
      expect(await authStatus(mine.value)).toBe(200);
      expect(await authStatus(globex.serviceAccount.apiKey)).toBe(200);
    });

    it('revokes at once (204, empty body), idempotently, with one audit record', async () => {
      const sa = await createAccount();
      const key = await createKey(sa.id);
      expect(await authStatus(key.value)).toBe(200);
      clock.advance(1);
      const res = await api.call('POST', `${BASE}/${sa.id}/api-keys/${key.id}/revoke`, { as: manager });
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectError(await api.call('GET', '/api/v0/computers/providers', { as: key.value }), 401, /revoked/);
      const row = await db().apiKey.findUniqueOrThrow({ where: { id: key.id } });
      expect(row.revokedAt?.getTime()).toBe(clock.now().getTime());
      expect(row.validUntil).toBeNull();

      clock.advance(1000);
      expect((await api.call('POST', `${BASE}/${sa.id}/api-keys/${key.id}/revoke`, { as: owner })).status).toBe(204);
      expect((await db().apiKey.findUniqueOrThrow({ where: { id: key.id } })).revokedAt).toEqual(row.revokedAt);
      const audits = (await auditsFor(key.id)).map((a) => a.payload);
      expect(audits).toEqual([{ intent: 'created' }, { intent: 'revoked', graceWindowEnded: false }]);
    });

    it.runIf(backend === 'postgres')('ends a key on every replica at once: revoked, rotated or its account deactivated through another', async () => {
      const other = await api.replica();
      try {
        /** The status of an authenticated call with `key` to the other replica, which has the key cached by then. */
        const onOther = async (key: string) => (await fetch(`${other.url}/api/v0/computers/providers`, { headers: { authorization: `Bearer ${key}` } })).status;
        const sa = await createAccount();
        const [revoked, rotated, idle] = [await createKey(sa.id), await createKey(sa.id), await createKey(sa.id)];
        for (const key of [revoked, rotated, idle]) expect(await onOther(key.value)).toBe(200);

        expect((await api.call('POST', `${BASE}/${sa.id}/api-keys/${revoked.id}/revoke`, { as: manager })).status).toBe(204);
        expect(await onOther(revoked.value)).toBe(401);

        const rotation = await api.call('POST', `${BASE}/${sa.id}/api-keys/${rotated.id}/rotate`, { as: manager, body: {} });
        expect(rotation.status).toBe(200);
        expect(await onOther(rotated.value)).toBe(401);
        expect(await onOther(rotation.body.apiKey.value)).toBe(200);

        expect((await api.call('PATCH', `${BASE}/${sa.id}`, { as: manager, body: { status: 'inactive' } })).status).toBe(200);
        expect(await onOther(idle.value)).toBe(401);
        expect((await api.call('PATCH', `${BASE}/${sa.id}`, { as: manager, body: { status: 'active' } })).status).toBe(200);
        expect(await onOther(idle.value)).toBe(200);
      } finally {
        await other.close();
      }
    });
  });

  describe('rotate', () => {
    it('revokes the old key at once and issues a replacement with the same name, in one step', async () => {
      const sa = await createAccount();
      const old = await createKey(sa.id, { name: 'deployer', expiresAt: clock.now().getTime() + 60 * MINUTE });
      clock.advance(1);
      const res = await api.call('POST', `${BASE}/${sa.id}/api-keys/${old.id}/rotate`, { as: manager });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const fresh = res.body.apiKey;
      expect(res.body).toEqual({
        apiKey: { id: expect.stringMatching(/^key_/), value: expect.stringMatching(/^apk_/), fingerprint: fresh.value.slice(-6), name: 'deployer' },
      });
      expect(fresh.id).not.toBe(old.id);
      expect(fresh.value).not.toBe(old.value);
      expectError(await api.call('GET', '/api/v0/computers/providers', { as: old.value }), 401, /revoked/);
      expect(await authStatus(fresh.value)).toBe(200);

      const oldRow = await db().apiKey.findUniqueOrThrow({ where: { id: old.id } });
      expect(oldRow.revokedAt?.getTime()).toBe(clock.now().getTime());
      expect(oldRow.validUntil).toBeNull();
      const newRow = await db().apiKey.findUniqueOrThrow({ where: { id: fresh.id } });
      expect(newRow).toMatchObject({ name: 'deployer', serviceAccountId: sa.id, secretHash: sha256(fresh.value), expiresAt: null });
      const audit = (await auditsFor(old.id)).at(-1)!;
      expect(audit).toMatchObject({
        eventType: 'api_key_lifecycle_change',
        payload: { intent: 'rotated', replacementKeyId: fresh.id, gracePeriodMinutes: 0, validUntil: null },
        before: { id: old.id, isRevoked: false },
        after: { revoked: { id: old.id, isRevoked: true }, replacement: { id: fresh.id, name: 'deployer' } },
      });
      expect(JSON.stringify(audit)).not.toContain(fresh.value);
    });

    it('keeps the old key working through the grace window only, and sets the new expiry', async () => {
      const sa = await createAccount();
      const old = await createKey(sa.id);
      const expiresAt = clock.now().getTime() + 120 * MINUTE;
      const res = await api.call('POST', `${BASE}/${sa.id}/api-keys/${old.id}/rotate`, {
        as: manager,
        body: { gracePeriodMinutes: 5, expiresAt },
      });
      expect(res.status).toBe(200);
      expect(res.body.apiKey.expiresAt).toBe(expiresAt);
      const row = await db().apiKey.findUniqueOrThrow({ where: { id: old.id } });
      expect(row.validUntil?.getTime()).toBe(clock.now().getTime() + 5 * MINUTE);
      const listed = await api.call('GET', `${BASE}/${sa.id}/api-keys`, { as: manager });
      expect(listed.body.apiKeys.find((k: { id: string }) => k.id === old.id)).toMatchObject({ isRevoked: true });

      clock.advance(5 * MINUTE - 1);
      expect(await authStatus(old.value)).toBe(200);
      expect(await authStatus(res.body.apiKey.value)).toBe(200);
      clock.advance(1);
      expect(await authStatus(old.value)).toBe(401);
      expect(await authStatus(res.body.apiKey.value)).toBe(200);
    });

    it('ends a grace window at once when the rotated key is revoked', async () => {
      const sa = await createAccount();
      const old = await createKey(sa.id);
      clock.advance(1);
      await api.call('POST', `${BASE}/${sa.id}/api-keys/${old.id}/rotate`, { as: manager, body: { gracePeriodMinutes: 10 } });
      expect(await authStatus(old.value)).toBe(200);
      clock.advance(1);
      expect((await api.call('POST', `${BASE}/${sa.id}/api-keys/${old.id}/revoke`, { as: manager })).status).toBe(204);
      expect(await authStatus(old.value)).toBe(401);
      expect((await auditsFor(old.id)).at(-1)?.payload).toEqual({ intent: 'revoked', graceWindowEnded: true });
    });

    it('refuses bad bodies and a grace window that outlasts the key with 400, changing nothing', async () => {
      const sa = await createAccount();
      const key = await createKey(sa.id, { expiresAt: clock.now().getTime() + 3 * MINUTE });
      const before = await snapshot();
      const bodies: [unknown, RegExp][] = [
        [{ gracePeriodMinutes: 11 }, /gracePeriodMinutes/],
        [{ gracePeriodMinutes: -1 }, /gracePeriodMinutes/],
        [{ gracePeriodMinutes: 1.5 }, /gracePeriodMinutes/],
        [{ gracePeriodMinutes: '5' }, /gracePeriodMinutes/],
        [{ expiresAt: 0 }, /expiresAt/],
        [{ expiresAt: clock.now().getTime() - 1 }, /not in the future/],
        [{ name: 'renamed' }, /name/],
        [{ gracePeriodMinutes: 4 }, /expires at .* before a 4-minute grace window/],
      ];
      for (const [body, detail] of bodies) {
        expectError(await api.call('POST', `${BASE}/${sa.id}/api-keys/${key.id}/rotate`, { as: manager, body }), 400, detail);
      }
      expect(await snapshot()).toEqual(before);
      expect(await authStatus(key.value)).toBe(200);
      // A window that ends exactly at expiry is allowed.
      expect((await api.call('POST', `${BASE}/${sa.id}/api-keys/${key.id}/rotate`, { as: manager, body: { gracePeriodMinutes: 3 } })).status).toBe(200);
    });

    it('answers 409 to rotating a revoked key, also one inside its grace window', async () => {
      const sa = await createAccount();
      const revoked = await createKey(sa.id);
      await api.call('POST', `${BASE}/${sa.id}/api-keys/${revoked.id}/revoke`, { as: manager });
      const graced = await createKey(sa.id);
      await api.call('POST', `${BASE}/${sa.id}/api-keys/${graced.id}/rotate`, { as: manager, body: { gracePeriodMinutes: 2 } });
      const before = await snapshot();
      for (const key of [revoked, graced]) {
        expectError(await api.call('POST', `${BASE}/${sa.id}/api-keys/${key.id}/rotate`, { as: manager, body: {} }), 409, /already revoked/);
      }
      expect(await snapshot()).toEqual(before);
    });

    it('lets only one of several concurrent rotations of one key succeed', async () => {
      const sa = await createAccount();
      const old = await createKey(sa.id, { name: 'contended' });
      const results = await Promise.all(
        Array.from({ length: 5 }, () => api.call('POST', `${BASE}/${sa.id}/api-keys/${old.id}/rotate`, { as: manager, body: {} })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
      const keys = await db().apiKey.findMany({ where: { serviceAccountId: sa.id } });
      expect(keys.filter((k) => k.revokedAt === null).map((k) => k.id)).toEqual([results.find((r) => r.status === 200)!.body.apiKey.id]);
      expect(keys).toHaveLength(2);
    });

    it('renews an expired key, unless another live key has taken its name since', async () => {
      const sa = await createAccount();
      const expired = await createKey(sa.id, { name: 'nightly', expiresAt: clock.now().getTime() + MINUTE });
      clock.advance(MINUTE);
      const renewed = await api.call('POST', `${BASE}/${sa.id}/api-keys/${expired.id}/rotate`, { as: manager });
      expect(renewed.status).toBe(200);
      expect(await authStatus(renewed.body.apiKey.value)).toBe(200);

      const lapsed = await createKey(sa.id, { name: 'weekly', expiresAt: clock.now().getTime() + MINUTE });
      clock.advance(MINUTE);
      const successor = await createKey(sa.id, { name: 'weekly' });
      expectError(await api.call('POST', `${BASE}/${sa.id}/api-keys/${lapsed.id}/rotate`, { as: manager }), 409, new RegExp(successor.id));
    });
  });

  describe('plan and roles', () => {
    it('answers 402 when the plan lacks service accounts, but still lets keys be revoked and accounts deleted', async () => {
      const key = await db().apiKey.findFirstOrThrow({ where: { serviceAccountId: globex.serviceAccount.id } });
      const extra = await createAccount({}, globex.members.owner.apiKey);
      const extraKey = await createKey(extra.id, {}, globex.members.owner.apiKey);
      await db().organization.update({ where: { id: globex.id }, data: { entitlements: { serviceAccounts: false } } });
      try {
        const as = globex.members.owner.apiKey;
        const sa = `${BASE}/${globex.serviceAccount.id}`;
        const before = await snapshot();
        const refused: [string, string, unknown?][] = [
          ['GET', BASE],
          ['POST', BASE, { name: 'blocked', status: 'active' }],
          ['GET', sa],
          ['PATCH', sa, { status: 'inactive' }],
          ['GET', `${sa}/api-keys`],
          ['POST', `${sa}/api-keys`, { name: 'blocked' }],
          ['POST', `${sa}/api-keys/${key.id}/rotate`, {}],
        ];
        for (const [method, path, body] of refused) {
          expectError(await api.call(method, path, { as, body }), 402, /plan/);
        }
        expect(await snapshot()).toEqual(before);
        // acme's plan is untouched.
        expect((await api.call('GET', BASE, { as: manager })).status).toBe(200);

        expect((await api.call('POST', `${BASE}/${extra.id}/api-keys/${extraKey.id}/revoke`, { as })).status).toBe(204);
        expect(await authStatus(extraKey.value)).toBe(401);
        expect((await api.call('DELETE', `${BASE}/${extra.id}`, { as })).status).toBe(200);
      } finally {
        await db().organization.update({ where: { id: globex.id }, data: { entitlements: {} } });
      }
      expect((await api.call('GET', BASE, { as: globex.members.owner.apiKey })).status).toBe(200);
    });

    it('refuses service-account credentials and members below manager with 403 on every endpoint, changing nothing', async () => {
      const sa = await createAccount();
      const key = await createKey(sa.id);
      const endpoints: [string, string, unknown?][] = [
        ['GET', BASE],
        ['POST', BASE, { name: 'forbidden', status: 'active' }],
        ['GET', `${BASE}/${sa.id}`],
        ['PATCH', `${BASE}/${sa.id}`, { status: 'inactive' }],
        ['DELETE', `${BASE}/${sa.id}`],
        ['GET', `${BASE}/${sa.id}/api-keys`],
        ['POST', `${BASE}/${sa.id}/api-keys`, { name: 'forbidden' }],
        ['POST', `${BASE}/${sa.id}/api-keys/${key.id}/revoke`],
        ['POST', `${BASE}/${sa.id}/api-keys/${key.id}/rotate`, {}],
      ];
      const callers: [string, RegExp][] = [
        [key.value, /Service account credentials/],
        [acme.serviceAccount.apiKey, /Service account credentials/],
        [acme.members.user.apiKey, /manager or owner/],
        [acme.members.user.jwt, /manager or owner/],
        [acme.members.guest.apiKey, /manager or owner/],
        [acme.members.guest.jwt, /manager or owner/],
      ];
      const before = await snapshot();
      for (const [method, path, body] of endpoints) {
        for (const [as, detail] of callers) expectError(await api.call(method, path, { as, body }), 403, detail);
        expectError(await api.call(method, path, { body }), 401);
        expectError(await api.call(method, path, { as: `apk_${'0'.repeat(40)}`, body }), 401);
      }
      expect(await snapshot()).toEqual(before);
      expect(await authStatus(key.value)).toBe(200);
    });

    it('serves managers and owners by API key and by JWT', async () => {
      for (const as of [acme.members.manager.apiKey, acme.members.manager.jwt, acme.members.owner.apiKey, acme.members.owner.jwt]) {
        expect((await api.call('GET', BASE, { as })).status).toBe(200);
        const sa = await createAccount({}, as);
        await createKey(sa.id, {}, as);
      }
    });

    it('documents every endpoint with the statuses the spec lists', async () => {
      const doc = (await api.call('GET', '/api/v0/openapi.json')).body;
      const statuses = (path: string, method: string) => Object.keys(doc.paths[path][method].responses).map(Number).sort();
      expect(statuses(BASE, 'get')).toEqual([200, 401, 402, 403, 500]);
      expect(statuses(BASE, 'post')).toEqual([201, 400, 401, 402, 403, 409, 500]);
      expect(statuses(`${BASE}/{serviceAccountId}`, 'get')).toEqual([200, 401, 402, 403, 404, 500]);
      expect(statuses(`${BASE}/{serviceAccountId}`, 'patch')).toEqual([200, 400, 401, 402, 403, 404, 409, 500]);
      expect(statuses(`${BASE}/{serviceAccountId}`, 'delete')).toEqual([200, 401, 403, 404, 500]);
      expect(statuses(`${BASE}/{serviceAccountId}/api-keys`, 'get')).toEqual([200, 401, 402, 403, 404, 500]);
      expect(statuses(`${BASE}/{serviceAccountId}/api-keys`, 'post')).toEqual([201, 400, 401, 402, 403, 404, 409, 500]);
      expect(statuses(`${BASE}/{serviceAccountId}/api-keys/{keyId}/revoke`, 'post')).toEqual([204, 401, 403, 404, 500]);
      expect(statuses(`${BASE}/{serviceAccountId}/api-keys/{keyId}/rotate`, 'post')).toEqual([200, 400, 401, 402, 403, 404, 409, 500]);
    });
  });
});
