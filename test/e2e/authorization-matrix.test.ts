import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../../src/auth/issue-api-key.ts';
import { roleAtLeast, type Role } from '../../src/auth/principal.ts';
import { newId } from '../../src/lib/ids.ts';
import { ROLES, startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';
import { appWithoutDatabase } from '../support/route-table.ts';

/**
 * Who may call each administrative endpoint: the lowest role, and whether service-account
 * credentials are refused outright. The test fails when the app serves an endpoint under
 * /api/v0/service-accounts or /api/v0/organization that this table lacks, or when the table in
 * docs/api-decisions.md says otherwise, so no endpoint ships without a written-down decision.
 * `query` makes what a successful call needs (e.g. an invitation to revoke).
 */
interface Rule {
  minRole: Role;
  humanOnly: boolean;
  body?: () => unknown;
  query?: (api: TestApi) => Promise<string>;
}
const MATRIX: Record<string, Rule> = {
  'GET /api/v0/service-accounts': { minRole: 'manager', humanOnly: true },
  'POST /api/v0/service-accounts': { minRole: 'manager', humanOnly: true, body: () => ({ name: newId('m'), status: 'active' }) },
  'GET /api/v0/service-accounts/{serviceAccountId}': { minRole: 'manager', humanOnly: true },
  'PATCH /api/v0/service-accounts/{serviceAccountId}': { minRole: 'manager', humanOnly: true, body: () => ({ description: newId('d') }) },
  'DELETE /api/v0/service-accounts/{serviceAccountId}': { minRole: 'manager', humanOnly: true },
  'GET /api/v0/service-accounts/{serviceAccountId}/api-keys': { minRole: 'manager', humanOnly: true },
  'POST /api/v0/service-accounts/{serviceAccountId}/api-keys': { minRole: 'manager', humanOnly: true, body: () => ({ name: newId('k') }) },
  'POST /api/v0/service-accounts/{serviceAccountId}/api-keys/{keyId}/revoke': { minRole: 'manager', humanOnly: true },
  'POST /api/v0/service-accounts/{serviceAccountId}/api-keys/{keyId}/rotate': { minRole: 'manager', humanOnly: true, body: () => ({}) },
  'GET /api/v0/organization/users': { minRole: 'manager', humanOnly: false },
  'DELETE /api/v0/organization/users': { minRole: 'manager', humanOnly: false, query: pendingInvitation },
  'POST /api/v0/organization/users/invite': { minRole: 'manager', humanOnly: false, body: () => ({ email: `${newId('i')}@matrix.test` }) },
  'GET /api/v0/organization/usage/limits/global': { minRole: 'manager', humanOnly: false },
  'PUT /api/v0/organization/usage/limits/global': { minRole: 'manager', humanOnly: false, body: () => ({ limit: null }) },
  'GET /api/v0/organization/usage/limits/users': { minRole: 'manager', humanOnly: false },
  'PUT /api/v0/organization/usage/limits/users': { minRole: 'manager', humanOnly: false, body: () => ({ users: [{ email: 'user@acme.test', limit: null }] }) },
  'GET /api/v0/organization/enterprise-controls': { minRole: 'manager', humanOnly: false },
  'PUT /api/v0/organization/enterprise-controls': { minRole: 'manager', humanOnly: true, body: () => ({ settings: { matrix: newId('v') } }) },
  'GET /api/v0/organization/enterprise-controls/history': { minRole: 'manager', humanOnly: false },
  'GET /api/v0/organization/turns': { minRole: 'manager', humanOnly: false },
};

const ADMIN_PATHS = /^\/api\/v0\/(service-accounts|organization)(\/|$)/;

/** A pending invitation to acme, as the query that revokes it. */
async function pendingInvitation(api: TestApi): Promise<string> {
  const email = `${newId('pending')}@matrix.test`;
  const user = await api.db.prisma.user.create({ data: { id: newId('usr'), email } });
  await api.db.prisma.membership.create({
    data: { id: newId('mem'), organizationId: api.acme.id, userId: user.id, role: 'user', status: 'invited' },
  });
  return `?email=${encodeURIComponent(email)}`;
}

/** The table in docs/api-decisions.md, as `endpoint -> {minRole, humanOnly}`. */
function documentedMatrix(): Record<string, Pick<Rule, 'minRole' | 'humanOnly'>> {
  const doc = fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '../../docs/api-decisions.md'), 'utf8');
  const rows = [...doc.matchAll(/^\| `(\w+ \/api\/v0\/\S+)` \| (\w+) \| (refused|as role user) \|$/gm)];
  return Object.fromEntries(rows.map(([, endpoint, minRole, sa]) => [endpoint!, { minRole: minRole as Role, humanOnly: sa === 'refused' }]));
}

describe('authorization matrix', async () => {
  const { routes } = await appWithoutDatabase();
  const routeOf = (endpoint: string) => routes.find((r) => `${r.method.toUpperCase()} ${r.path}` === endpoint)!;

  it('covers every administrative endpoint the app serves', () => {
    const served = routes.filter((r) => ADMIN_PATHS.test(r.path)).map((r) => `${r.method.toUpperCase()} ${r.path}`);
    expect(new Set(served)).toEqual(new Set(Object.keys(MATRIX)));
  });

  it('is the table docs/api-decisions.md writes down', () => {
    const rules = Object.fromEntries(Object.entries(MATRIX).map(([endpoint, { minRole, humanOnly }]) => [endpoint, { minRole, humanOnly }]));
    expect(documentedMatrix()).toEqual(rules);
  });

  describe.each(BACKENDS)('on %s', (backend) => {
    let api: TestApi;

    beforeAll(async () => {
      api = await startTestApi(backend);
    });
    afterAll(() => api?.close());

    /** A fresh account with a key for each call, so deleting, revoking or rotating never changes what the next caller finds. */
    async function target() {
      const sa = await api.db.prisma.serviceAccount.create({
        data: { id: newId('sa'), organizationId: api.acme.id, name: newId('matrix-target'), createdBy: api.acme.members.owner.userId },
      });
      const key = await issueApiKey(api.db.prisma, { organizationId: api.acme.id, owner: { serviceAccountId: sa.id }, name: 'target', now: new Date() });
      return { serviceAccountId: sa.id, keyId: key.id };
    }

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
        // The status the route answers on success (each declares one).
        const [success] = Object.keys(routeOf(endpoint).responses).map(Number);
        for (const caller of callers()) {
          const { serviceAccountId, keyId } = await target();
          const url = template.replace('{serviceAccountId}', serviceAccountId).replace('{keyId}', keyId) + ((await rule.query?.(api)) ?? '');
          const res = await api.call(method, url, { as: caller.credential, body: rule.body?.() });
          const allowed = roleAtLeast(caller.role, rule.minRole) && (caller.human || !rule.humanOnly);
          if (allowed) {
            expect(res.status, `${caller.name} -> ${endpoint}: ${JSON.stringify(res.body)}`).toBe(success);
          } else {
            expect(res.status, `${caller.name} -> ${endpoint}`).toBe(403);
            // Which rule refused it: a service-account key where only people may call, else the role.
            const detail = !caller.human && rule.humanOnly ? /authenticate as a human user/ : /requires the manager or owner role/;
            expect(res.body, `${caller.name} -> ${endpoint}`).toMatchObject({ status: 403, title: 'Forbidden', detail: expect.stringMatching(detail) });
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
