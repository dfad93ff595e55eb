import { roleAtLeast, type Principal } from '../../../auth/principal.ts';
import { BadRequest, Forbidden } from '../../../lib/errors.ts';
import { PUBLIC_API_SOURCE, recordAudit } from '../../audit/record.ts';
import type { ComputersDeps } from '../deps.ts';
import type { Db } from '../../../db/client.ts';
import { BYOM } from '../machines.ts';
import { PROGRAM_PROVIDER } from '../program-template.ts';
import { keyOf } from './converge.ts';
import { poolConvergeJob } from './job-kinds.ts';
import { configuredPools, POOL_OWNER, poolKeyOf, providerDefaults, type PoolKey } from './pools.ts';
import type { PoolView } from './schemas.ts';

/** Warm pools are the organization's shared capacity: managers and owners see and size them. */
export function assertMaySizePools(principal: Principal): void {
  if (!roleAtLeast(principal.role, 'manager')) throw new Forbidden('Only managers and owners can see and size warm pools');
}

type VersionCount = NonNullable<PoolView['versions']>[number];

/**
 * Counts a program pool's members per version, and lists each program pool's versions, the
 * template's current one first (shown with no member yet while the pool fills), then newest first.
 */
async function versionCounter(db: Db, organizationId: string) {
  const templates = await db.computerTemplate.findMany({
    where: { organizationId, programRepository: { not: null } },
    select: { id: true, currentVersionId: true },
  });
  const current = new Map(templates.map((t) => [t.id, t.currentVersionId]));
  const versions = await db.computerTemplateVersion.findMany({ where: { organizationId }, select: { id: true, commit: true, createdAt: true } });
  const byId = new Map(versions.map((v) => [v.id, v]));
  const counts = new Map<PoolView, Map<string | null, VersionCount>>();
  const rowOf = (pool: PoolView, versionId: string | null): VersionCount => {
    const rows = counts.get(pool) ?? new Map<string | null, VersionCount>();
    counts.set(pool, rows);
    const row = rows.get(versionId) ?? { versionId, commit: versionId ? (byId.get(versionId)?.commit ?? null) : null, ready: 0, provisioning: 0 };
    rows.set(versionId, row);
    return row;
  };
  return {
    count(pool: PoolView, versionId: string | null, state: 'ready' | 'provisioning') {
      rowOf(pool, versionId)[state]++;
    },
    withVersions(pool: PoolView): PoolView {
      if (pool.provider !== PROGRAM_PROVIDER || !pool.templateId) return pool;
      const currentId = current.get(pool.templateId) ?? null;
      if (currentId) rowOf(pool, currentId);
      const at = (id: string | null) => (id === currentId ? Infinity : (byId.get(id ?? '')?.createdAt.getTime() ?? -Infinity));
      const rows = [...(counts.get(pool)?.values() ?? [])].sort((a, b) => at(b.versionId) - at(a.versionId));
      return { ...pool, versions: rows };
    },
  };
}

/** The warm pools as the API shows them, and the organization's per-provider default size. */
export function poolOperations(deps: ComputersDeps) {
  return {
    /** Every pool with a size or with computers left (one draining after its size went to 0). */
    async listPools(principal: Principal): Promise<{ pools: PoolView[] }> {
      assertMaySizePools(principal);
      const pools = new Map<string, PoolView>();
      const add = (key: PoolKey, size: number) =>
        pools.set(poolKeyOf(key), {
          provider: key.provider,
          ...(key.templateId ? { templateId: key.templateId } : {}),
          size,
          ready: 0,
          provisioning: 0,
          failed: 0,
        });
      for (const spec of await configuredPools(deps.db, principal.organizationId)) add(spec, spec.size);
      const computers = await deps.db.computer.findMany({
        where: { organizationId: principal.organizationId, ownerKind: POOL_OWNER.kind, deletedAt: null },
        select: { providerType: true, source: true, status: true, operation: true, templateVersionId: true },
      });
      const perVersion = await versionCounter(deps.db, principal.organizationId);
      for (const c of computers) {
        const key = keyOf(c);
        if (!pools.has(key)) add({ provider: c.providerType, templateId: (c.source as { templateId?: string } | null)?.templateId ?? null }, 0);
        const pool = pools.get(key)!;
        const state = c.status === 'error' ? 'failed' : c.status === 'active' && c.operation === null ? 'ready' : 'provisioning';
        pool[state]++;
        if (c.providerType === PROGRAM_PROVIDER && state !== 'failed') perVersion.count(pool, c.templateVersionId, state);
      }
      return { pools: [...pools.values()].map(perVersion.withVersions) };
    },

    /** Sets the size of the provider's pool of plain computers (no template); 0 drains it. */
    async setProviderPoolSize(principal: Principal, provider: string, warmPoolSize: number) {
      assertMaySizePools(principal);
      if (provider === BYOM || !deps.providers.get(provider)) {
        throw new BadRequest(`Provider "${provider}" is not a managed provider of this deployment; warm pools hold managed computers`);
      }
      if (provider === PROGRAM_PROVIDER) {
        throw new BadRequest(`A pool of ${PROGRAM_PROVIDER} computers is a program template's: set the template's warmPoolSize`);
      }
      await deps.db.$transaction(async (tx) => {
        const [org] = await tx.$queryRaw<{ warm_pool_defaults: unknown }[]>`
          SELECT warm_pool_defaults FROM organizations WHERE id = ${principal.organizationId} FOR UPDATE`;
        const before = providerDefaults(org?.warm_pool_defaults);
        const after = { ...before, [provider]: warmPoolSize };
        if (warmPoolSize === 0) delete after[provider];
        await tx.organization.update({ where: { id: principal.organizationId }, data: { warmPoolDefaults: after } });
        await recordAudit(tx, {
          organizationId: principal.organizationId,
          eventType: 'computer_pool_change',
          source: PUBLIC_API_SOURCE,
          actor: principal,
          target: { provider },
          before: { warmPoolSize: before[provider] ?? 0 },
          after: { warmPoolSize },
          payload: { action: 'updated' },
          at: deps.clock.now(),
        });
        await deps.queue.send(poolConvergeJob, { organizationId: principal.organizationId }, { tx });
      });
      return { provider, warmPoolSize };
    },
  };
}
