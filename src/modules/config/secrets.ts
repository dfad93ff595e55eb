import type { Principal } from '../../auth/principal.ts';
import { newId } from '../../lib/ids.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../audit/record.ts';
import type { ConfigDeps } from './deps.ts';
import type { SecretView } from './schemas.ts';

const view = (s: { name: string; createdAt: Date; updatedAt: Date }): SecretView => ({
  name: s.name,
  createdAt: s.createdAt.getTime(),
  updatedAt: s.updatedAt.getTime(),
});

/** Write-only secrets that documents name: set (create or replace) and list, never read back. */
export function secretOperations({ db, clock, secrets }: Pick<ConfigDeps, 'db' | 'clock' | 'secrets'>) {
  return {
    async list(principal: Principal) {
      const rows = await db.configSecret.findMany({ where: { organizationId: principal.organizationId }, orderBy: { name: 'asc' } });
      return { secrets: rows.map(view) };
    },

    async put(principal: Principal, name: string, value: string): Promise<{ secret: SecretView; created: boolean }> {
      const organizationId = principal.organizationId;
      const now = clock.now();
      return db.$transaction(async (tx) => {
        const before = await tx.configSecret.findUnique({ where: { organizationId_name: { organizationId, name } } });
        const row = await tx.configSecret.upsert({
          where: { organizationId_name: { organizationId, name } },
          create: {
            id: newId('cfs'),
            organizationId,
            name,
            sealedValue: secrets.seal(value),
            createdBy: principal.kind === 'user' ? principal.userId : principal.serviceAccountId,
            createdAt: now,
            updatedAt: now,
          },
          update: { sealedValue: secrets.seal(value), updatedAt: now },
        });
        await recordAudit(tx, {
          organizationId,
          eventType: 'config_secret_change',
          source: PUBLIC_API_SOURCE,
          actor: principal,
          target: { secret: name },
          payload: { action: before ? 'replaced' : 'created' },
          at: now,
        });
        return { secret: view(row), created: !before };
      });
    },
  };
}
