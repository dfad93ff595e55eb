import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../../src/db/client.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { bootstrapOrganization } from '../../src/modules/organization/bootstrap.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';

describe.each(BACKENDS)('bootstrap on %s', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  beforeAll(async () => {
    db = await openTestDatabase(backend);
  });
  afterAll(() => db?.dispose());

  it('creates one organization, one owner and one key when replicas bootstrap at once', async () => {
    // Replicas are separate clients (separate pools) on PostgreSQL; PGlite has one in-process client.
    const url = db.kind === 'postgres' ? db.url : undefined;
    const clients = Array.from({ length: 5 }, () => (url ? new PrismaClient({ adapter: new PrismaPg({ connectionString: url }) }) : db.prisma));
    try {
      const results = await Promise.all(clients.map((c) => bootstrapOrganization(c, { org: 'race', email: 'race@example.test' }, systemClock)));
      expect(new Set(results.map((r) => r.organizationId)).size).toBe(1);
      expect(new Set(results.map((r) => r.userId)).size).toBe(1);
      expect(results.filter((r) => r.apiKey !== null)).toHaveLength(1);
      expect(await db.prisma.organization.count({ where: { name: 'race' } })).toBe(1);
      expect(await db.prisma.apiKey.count({ where: { userId: results[0]!.userId } })).toBe(1);
      expect(await db.prisma.membership.findMany({ where: { organizationId: results[0]!.organizationId } })).toEqual([
        expect.objectContaining({ role: 'owner', status: 'active' }),
      ]);
    } finally {
      if (url) await Promise.all(clients.map((c) => c.$disconnect()));
    }
  });
});
