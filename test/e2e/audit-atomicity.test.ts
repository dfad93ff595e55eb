import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../../src/auth/issue-api-key.ts';
import { newId } from '../../src/lib/ids.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';

/**
 * Every administrative change writes its audit record in the change's own transaction: when the
 * record cannot be written, the change does not happen either. A trigger makes the audit store
 * refuse every record; each change must then answer 500 and leave every table as it was, and
 * succeed once the store accepts records again.
 */
describe.each(BACKENDS)('administrative changes and their audit records on %s', (backend) => {
  let api: TestApi;
  let manager: string;
  let owner: string;

  beforeAll(async () => {
    api = await startTestApi(backend);
    manager = api.acme.members.manager.apiKey;
    owner = api.acme.members.owner.apiKey;
  });
  afterAll(() => api?.close());

  const db = () => api.db.prisma;

  async function refuseAuditRecords(refuse: boolean) {
    if (refuse) {
      await db().$executeRawUnsafe(
        `CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the audit store refuses records (test)'; END $$`,
      );
      await db().$executeRawUnsafe(`CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_records FOR EACH ROW EXECUTE FUNCTION refuse_audit()`);
    } else {
      await db().$executeRawUnsafe(`DROP TRIGGER refuse_audit ON audit_records`);
      await db().$executeRawUnsafe(`DROP FUNCTION refuse_audit()`);
    }
  }

  /** Every table an administrative change writes. */
  async function snapshot() {
    const byId = { orderBy: { id: 'asc' as const } };
    return Promise.all([
      db().organization.findMany(byId),
      db().user.findMany(byId),
      db().membership.findMany(byId),
      db().serviceAccount.findMany(byId),
      db().apiKey.findMany(byId),
      db().gitCredential.findMany(byId),
      db().enterpriseControlChange.findMany(byId),
      db().auditRecord.findMany(byId),
      db().authEpoch.findMany(),
    ]);
  }

  /** An account with a key, made directly in the database (its making is not under test). */
  async function accountWithKey() {
    const sa = await db().serviceAccount.create({
      data: { id: newId('sa'), organizationId: api.acme.id, name: newId('audited'), createdBy: api.acme.members.owner.userId },
    });
    const key = await issueApiKey(db(), { organizationId: api.acme.id, owner: { serviceAccountId: sa.id }, name: 'k', now: new Date() });
    return { sa: sa.id, key: key.id };
  }

  const CHANGES: Record<string, (t: { sa: string; key: string }) => { method: string; path: string; body?: unknown; as?: string; ok: number }> = {
    'create a service account': () => ({ method: 'POST', path: '/api/v0/service-accounts', body: { name: newId('n'), status: 'active' }, ok: 201 }),
    'change a service account': (t) => ({ method: 'PATCH', path: `/api/v0/service-accounts/${t.sa}`, body: { status: 'inactive' }, ok: 200 }),
    'delete a service account': (t) => ({ method: 'DELETE', path: `/api/v0/service-accounts/${t.sa}`, ok: 200 }),
    'issue an API key': (t) => ({ method: 'POST', path: `/api/v0/service-accounts/${t.sa}/api-keys`, body: { name: newId('k') }, ok: 201 }),
    'revoke an API key': (t) => ({ method: 'POST', path: `/api/v0/service-accounts/${t.sa}/api-keys/${t.key}/revoke`, ok: 204 }),
    'rotate an API key': (t) => ({
      method: 'POST',
      path: `/api/v0/service-accounts/${t.sa}/api-keys/${t.key}/rotate`,
      body: { gracePeriodMinutes: 5 },
      ok: 200,
    }),
    'invite a member': () => ({ method: 'POST', path: '/api/v0/organization/users/invite', body: { email: `${newId('i')}@audit.test` }, ok: 200 }),
    "change a member's role": () => ({ method: 'POST', path: '/api/v0/organization/users/invite', body: { email: 'guest@acme.test', role: 'user' }, ok: 200 }),
    'remove a member': () => ({ method: 'DELETE', path: '/api/v0/organization/users?email=user%40acme.test', as: owner, ok: 204 }),
    'set the global credit limit': () => ({ method: 'PUT', path: '/api/v0/organization/usage/limits/global', body: { limit: 2_000_000 }, ok: 200 }),
    "set a member's credit limit": () => ({
      method: 'PUT',
      path: '/api/v0/organization/usage/limits/users',
      body: { users: [{ email: 'manager@acme.test', limit: 3_000_000 }] },
      ok: 200,
    }),
    'change the enterprise controls': () => ({
      method: 'PUT',
      path: '/api/v0/organization/enterprise-controls',
      body: { settings: { audited: newId('v') } },
      ok: 200,
    }),
  };

  for (const [change, request] of Object.entries(CHANGES)) {
    it(`does not ${change} when its audit record cannot be written`, async () => {
      const { method, path, body, as = manager, ok } = request(await accountWithKey());
      const before = await snapshot();
      await refuseAuditRecords(true);
      try {
        const refused = await api.call(method, path, { as, body });
        expect(refused.status, JSON.stringify(refused.body)).toBe(500);
        expect(refused.body).toMatchObject({ status: 500, title: 'Internal Server Error', detail: expect.any(String) });
      } finally {
        await refuseAuditRecords(false);
      }
      expect(await snapshot()).toEqual(before);

      const done = await api.call(method, path, { as, body });
      expect(done.status, JSON.stringify(done.body)).toBe(ok);
      expect(await db().auditRecord.count()).toBeGreaterThan(before[7].length);
    });
  }
});
