import type { Db } from '../../../db/client.ts';
import type { ComputerTemplate, Prisma } from '../../../generated/prisma/client.ts';
import { isProgramTemplate, PROGRAM_PROVIDER } from '../program-template.ts';

/**
 * A warm pool's computers are stored like any managed computer, owned by this owner: no user or
 * service account, so every read that goes through an owner (list, get, by name, events of a
 * computer, sessions) never finds them, and the few reads by organization exclude the kind.
 */
export const POOL_OWNER = { kind: 'pool', id: 'pool' } as const;

/** Every computer but the pools': for the reads that go by organization, not by owner. */
export const NOT_POOL: Prisma.ComputerWhereInput = { ownerKind: { not: POOL_OWNER.kind } };

/** Bounds of `warmPoolSize`, per template and per provider (docs/api-decisions.md). */
export const MAX_WARM_POOL_SIZE = 50;

/** How long after a claim its pool starts refilling (docs/api-decisions.md). */
export const REFILL_DELAY_MS = 3_000;

/** One warm pool: a provider's plain computers (`templateId` null), or a template's. */
export interface PoolKey {
  provider: string;
  templateId: string | null;
}

/** How a program template's pool moves to a new current version (roll.ts). */
type PoolUpdate = 'Recreate' | 'OnReplenish' | 'RollingUpdate';

/** A program template's pool: the version its new members get, and how old members are replaced. */
export interface ProgramPool {
  /** null while no version has passed its preview: the pool cannot grow. */
  currentVersionId: string | null;
  update: PoolUpdate;
  maxUnavailable: number;
}

/** A pool as configured now: its size and what its computers are provisioned with. */
export interface PoolSpec extends PoolKey {
  size: number;
  repos: string[];
  setupScript?: string;
  program?: ProgramPool;
}

/** The provider a template's pool members run on: `program` for a program template's. */
export const poolProviderOf = (t: Pick<ComputerTemplate, 'provider' | 'programRepository'> | null): string | null =>
  isProgramTemplate(t) ? PROGRAM_PROVIDER : (t?.provider ?? null);

const POOL_UPDATES: readonly string[] = ['Recreate', 'OnReplenish', 'RollingUpdate'] satisfies PoolUpdate[];

function programPool(t: ComputerTemplate): ProgramPool | undefined {
  if (!isProgramTemplate(t)) return undefined;
  return {
    currentVersionId: t.currentVersionId,
    // An unknown stored value (none is written: the template's schema checks) is the gentlest.
    update: POOL_UPDATES.includes(t.poolUpdate) ? (t.poolUpdate as PoolUpdate) : 'OnReplenish',
    maxUnavailable: Math.max(1, t.poolMaxUnavailable),
  };
}

export const poolKeyOf = (p: PoolKey) => `${p.provider}/${p.templateId ?? ''}`;

/** The organization's per-provider defaults, as stored (`{provider: size}`). */
export function providerDefaults(stored: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (stored && typeof stored === 'object' && !Array.isArray(stored)) {
    for (const [k, v] of Object.entries(stored)) if (Number.isInteger(v) && (v as number) > 0) out[k] = v as number;
  }
  return out;
}

/** Every pool the organization has configured with a size above 0. */
export async function configuredPools(db: Db, organizationId: string): Promise<PoolSpec[]> {
  const org = await db.organization.findUnique({ where: { id: organizationId }, select: { warmPoolDefaults: true } });
  const templates = await db.computerTemplate.findMany({
    where: { organizationId, deletedAt: null, warmPoolSize: { gt: 0 }, OR: [{ provider: { not: null } }, { programRepository: { not: null } }] },
    orderBy: { createdAt: 'asc' },
  });
  return [
    ...Object.entries(providerDefaults(org?.warmPoolDefaults)).map(([provider, size]) => ({ provider, templateId: null, size, repos: [] })),
    ...templates.map((t) => {
      const program = programPool(t);
      return {
        provider: poolProviderOf(t)!,
        templateId: t.id,
        size: t.warmPoolSize,
        repos: t.repos,
        ...(t.setupScript ? { setupScript: t.setupScript } : {}),
        ...(program ? { program } : {}),
      };
    }),
  ];
}
