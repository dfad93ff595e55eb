import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../../src/auth/issue-api-key.ts';
import { roleAtLeast, type Role } from '../../src/auth/principal.ts';
import { newId } from '../../src/lib/ids.ts';
import { ROLES, startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';
import { appWithoutDatabase } from '../support/route-table.ts';

/**
 * Who may call each administrative endpoint: the lowest role, and whether service-account
 * credentials are refused outright. The test fails when the app serves an endpoint of these
 * groups that this table lacks, so a new endpoint cannot ship without an authorization decision.
 */
const MATRIX: Record<string, { minRole: Role; humanOnly: boolean; body?: () => unknown; query?: string }> = {
  'GET /api/v0/service-accounts': { minRole: 'manager', humanOnly: true },
  'POST /api/v0/service-accounts': { minRole: 'manager', humanOnly: true, body: () => ({ name: newId('m'), status: 'active' }) },
  'GET /api/v0/service-accounts/{serviceAccountId}': { minRole: 'manager', humanOnly: true },
  'PATCH /api/v0/service-accounts/{serviceAccountId}': { minRole: 'manager', humanOnly: true, body: () => ({ description: 'matrix' }) },
  'DELETE /api/v0/service-accounts/{serviceAccountId}': { minRole: 'manager', humanOnly: true },
  'GET /api/v0/service-accounts/{serviceAccountId}/api-keys': { minRole: 'manager', humanOnly: true },
  'POST /api/v0/service-accounts/{serviceAccountId}/api-keys': { minRole: 'manager', humanOnly: true, body: () => ({ name: newId('k') }) },
  'POST /api/v0/service-accounts/{serviceAccountId}/api-keys/{keyId}/revoke': { minRole: 'manager', humanOnly: true },
  'POST /api/v0/service-accounts/{serviceAccountId}/api-keys/{keyId}/rotate': { minRole: 'manager', humanOnly: true, body: () => ({}) },
  'GET /api/v0/organization/users': { minRole: 'manager', humanOnly: false },
  'DELETE /api/v0/organization/users': { minRole: 'manager', humanOnly: false, query: '?email=nobody@matrix.test' },
  'POST /api/v0/organization/users/invite': { minRole: 'manager', humanOnly: false, body: () => ({ email: `${newId('i')}@matrix.test` }) },
  'GET /api/v0/organization/usage/limits/global': { minRole: 'manager', humanOnly: false },
  'PUT /api/v0/organization/usage/limits/global': { minRole: 'manager', humanOnly: false, body: () => ({ limit: null }) },
  'GET /api/v0/organization/usage/limits/users': { minRole: 'manager', humanOnly: false },
  'PUT /api/v0/organization/usage/limits/users': { minRole: 'manager', humanOnly: false, body: () => ({ users: [{ email: 'user@acme.test', limit: null }] }) },
  'GET /api/v0/organization/enterprise-controls': { minRole: 'manager', humanOnly: false },
  'PUT /api/v0/organization/enterprise-controls': { minRole: 'manager', humanOnly: true, body: () => ({ settings: { matrix: true } }) },
  'GET /api/v0/organization/enterprise-controls/history': { minRole: 'manager', humanOnly: false },
};

const ADMIN_TAGS = new Set(['Service Accounts', 'Organization']);

describe('authorization matrix', () => {
  it('covers every administrative endpoint the app serves', () => {
    const { routes } = appWithoutDatabase();
    const served = routes.filter((r) => r.tags.some((t) => ADMIN_TAGS.has(t))).map((r) => `${r.method.toUpperCase()} ${r.path}`);
    expect(new Set(served)).toEqual(new Set(Object.keys(MATRIX)));
  });

  describe.each(BACKENDS)('on %s', (backend) => {
    let api: TestApi;
    let target: { serviceAccountId: string; keyId: string };

    beforeAll(async () => {
      api = await startTestApi(backend);
      // A separate account whose keys the matrix revokes and rotates, so the fixture's own stay valid.
      const sa = await api.db.prisma.serviceAccount.create({
        data: { id: newId('sa'), organizationId: api.acme.id, name: 'matrix-target', createdBy: api.acme.members.owner.userId },
      });
      const key = await issueApiKey(api.db.prisma, { organizationId: api.acme.id, owner: { serviceAccountId: sa.id }, name: 'target', now: new Date() });
      target = { serviceAccountId: sa.id, keyId: key.id };
    });
    afterAll(() => api?.close());

    const callers = () => [
      ...ROLES.flatMap((role) => [
        { name: `${role} (API key)`, role, human: true, credential: api.acme.members[role].apiKey },
        { name: `${role} (JWT)`, role, human: true, credential: api.acme.members[role].jwt },
      ]),
      { name: 'service account key', role: 'user' as Role, human: false, credential: api.acme.serviceAccount.apiKey },
    ];

    for (const [endpoint, rule] of Object.entries(MATRIX)) {
      it(endpoint, async () => {
        const [method, template] = endpoint.split(' ') as [string, string];
        const path = template.replace('{serviceAccountId}', target.serviceAccountId).replace('{keyId}', target.keyId) + (rule.query ?? '');
        for (const caller of callers()) {
          const res = await api.call(method, path, { as: caller.credential, body: rule.body?.() });
          const allowed = roleAtLeast(caller.role, rule.minRole) && (caller.human || !rule.humanOnly);
          if (allowed) {
            expect([401, 403], `${caller.name} -> ${endpoint}: ${JSON.stringify(res.body)}`).not.toContain(res.status);
          } else {
            expect(res.status, `${caller.name} -> ${endpoint}`).toBe(403);
            expect(res.body).toMatchObject({ status: 403, title: 'Forbidden' });
          }
        }
      });
    }

    it('answers 401 to every administrative endpoint without a credential', async () => {
      for (const endpoint of Object.keys(MATRIX)) {
        const [method, template] = endpoint.split(' ') as [string, string];
        const res = await api.call(method, template.replace('{serviceAccountId}', 'sa_x').replace('{keyId}', 'key_x'));
        expect(res.status, endpoint).toBe(401);
      }
    });
  });
});
