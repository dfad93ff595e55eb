import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.ts';
import { LISTED_ACCOUNTS } from '../../src/modules/service-accounts/reads.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';

const LIST = '/api/v0/service-accounts';

/**
 * GET /api/v0/service-accounts answers from a per-organization cache fenced by the auth epoch
 * (src/db/fenced-cache.ts). Changes here are made with plain Prisma writes, not through the API,
 * so only the database's triggers can make the next request see them.
 */
describe.each(BACKENDS)('the cached service-account list on %s', (backend) => {
  let api: TestApi;
  let listReads = 0;
  let manager: string;
  let orgId: string;

  beforeAll(async () => {
    api = await startTestApi(backend, {
      wrapReads: (reads) => (statement, params) => {
        if (statement.name === LISTED_ACCOUNTS.name) listReads++;
        return reads(statement, params);
      },
    });
    manager = api.acme.members.manager.apiKey;
    orgId = api.acme.id;
  });
  afterAll(() => api?.close());

  const db = () => api.db.prisma;
  async function listed(as = manager): Promise<{ id: string; name: string; status: string; description?: string; teamIds: string[] }[]> {
    const res = await api.call('GET', LIST, { as });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.serviceAccounts;
  }
  const names = async (as = manager) => (await listed(as)).map((a) => a.name);
  const addAccount = (name: string, organizationId = orgId) =>
    db().serviceAccount.create({ data: { id: newId('sa'), organizationId, name, createdBy: 'test' } });

  it('reads an organization list once, and keeps serving it across writes that change nothing listed', async () => {
    await listed();
    const before = listReads;
    for (let i = 0; i < 3; i++) await listed();
    expect(listReads).toBe(before);

    const { id: keyId } = await db().apiKey.findFirstOrThrow({ where: { organizationId: orgId } });
    await db().apiKey.update({ where: { id: keyId }, data: { lastUsedAt: new Date(), name: 'renamed' } });
    await db().organization.update({ where: { id: orgId }, data: { creditLimit: 5_000_000n, seatLimit: 50 } });
    await db().membership.updateMany({ where: { organizationId: orgId }, data: { creditLimit: 2_000_000n } });
    await db().user.update({ where: { id: api.acme.members.user.userId }, data: { firstName: 'Renamed', lastSignInAt: new Date() } });
    await listed();
    expect(listReads).toBe(before);
  });

  it('shows each change to a listed account on the very next request', async () => {
    const sa = await addAccount('fresh');
    expect(await names()).toContain('fresh');

    await db().serviceAccount.update({ where: { id: sa.id }, data: { description: 'now described', teamIds: ['team-1'] } });
    expect((await listed()).find((a) => a.id === sa.id)).toMatchObject({ description: 'now described', teamIds: ['team-1'] });

    // Each listed column on its own, by SQL that leaves updated_at alone (Prisma would set it too).
    const byColumn: [string, Record<string, unknown>][] = [
      [`UPDATE service_accounts SET description = 'by sql' WHERE id = $1`, { description: 'by sql' }],
      [`UPDATE service_accounts SET team_ids = ARRAY['team-2'] WHERE id = $1`, { teamIds: ['team-2'] }],
      [`UPDATE service_accounts SET name = 'renamed-by-sql' WHERE id = $1`, { name: 'renamed-by-sql' }],
      [`UPDATE service_accounts SET created_by = 'usr_other' WHERE id = $1`, { createdBy: 'usr_other' }],
      [`UPDATE service_accounts SET created_at = '2001-02-03T04:05:06Z' WHERE id = $1`, { createdAt: Date.parse('2001-02-03T04:05:06Z') }],
    ];
    for (const [sql, shown] of byColumn) {
      await db().$executeRawUnsafe(sql, sa.id);
      expect(
        (await listed()).find((a) => a.id === sa.id),
        sql,
      ).toMatchObject(shown);
    }

    await db().serviceAccount.update({ where: { id: sa.id }, data: { status: 'inactive' } });
    expect((await listed()).find((a) => a.id === sa.id)).toMatchObject({ status: 'inactive' });

    await db().serviceAccount.update({ where: { id: sa.id }, data: { status: 'deleted' } });
    expect(await names()).not.toContain('fresh');

    // Inside an interactive transaction, beside a write that changes nothing listed.
    await db().$transaction(async (tx) => {
      await tx.serviceAccount.create({ data: { id: newId('sa'), organizationId: orgId, name: 'in-tx', createdBy: 'test' } });
      await tx.organization.update({ where: { id: orgId }, data: { seatLimit: 51 } });
    });
    expect(await names()).toContain('in-tx');

    const gone = await addAccount('removed');
    expect(await names()).toContain('removed');
    await db().serviceAccount.delete({ where: { id: gone.id } });
    expect(await names()).not.toContain('removed');
  });

  it('answers 402 as soon as the plan loses service accounts, and the list again when it regains them', async () => {
    await listed();
    await db().organization.update({ where: { id: orgId }, data: { entitlements: { serviceAccounts: false } } });
    const refused = await api.call('GET', LIST, { as: manager });
    expect(refused.status).toBe(402);
    expect(refused.body.detail).toMatch(/not included in this organization's plan/);
    await db().organization.update({ where: { id: orgId }, data: { entitlements: {} } });
    expect(await names()).toContain(`acme-robot`);
  });

  it("keeps each organization's list apart", async () => {
    const globexManager = api.globex.members.manager.apiKey;
    await addAccount('acme-only');
    expect(await names()).toContain('acme-only');
    expect(await names(globexManager)).not.toContain('acme-only');
    await addAccount('globex-only', api.globex.id);
    expect(await names(globexManager)).toContain('globex-only');
    expect(await names()).not.toContain('globex-only');
  });

  it('serves the cached answer to concurrent requests, each one checked as a new request', async () => {
    await listed();
    const before = listReads;
    const answers = await Promise.all(Array.from({ length: 30 }, () => api.call('GET', LIST, { as: manager })));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => JSON.stringify(a.body))).size).toBe(1);
    expect(listReads).toBe(before);
    // A guest is still refused, and a service-account credential too: the guards run before the cache.
    expect((await api.call('GET', LIST, { as: api.acme.members.guest.apiKey })).status).toBe(403);
    expect((await api.call('GET', LIST, { as: api.acme.serviceAccount.apiKey })).status).toBe(403);
  });

  it.runIf(backend === 'postgres')('shows a change made through one replica on the next request to another', async () => {
    const other = await api.replica();
    try {
      const viaOther = async () => {
        const res = await fetch(`${other.url}${LIST}`, { headers: { authorization: `Bearer ${manager}` } });
        expect(res.status).toBe(200);
        return ((await res.json()) as { serviceAccounts: { name: string }[] }).serviceAccounts.map((a) => a.name);
      };
      expect(await viaOther()).not.toContain('made-on-a');
      const made = await api.call('POST', LIST, { as: manager, body: { name: 'made-on-a', status: 'active' } });
      expect(made.status).toBe(201);
      expect(await viaOther()).toContain('made-on-a');
      const removed = await api.call('DELETE', `${LIST}/${made.body.serviceAccount.id}`, { as: manager });
      expect(removed.status).toBe(200);
      expect(await viaOther()).not.toContain('made-on-a');
    } finally {
      await other.close();
    }
  });
});
