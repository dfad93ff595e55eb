import type { Db } from '../../../db/client.ts';
import { Prisma, type Computer } from '../../../generated/prisma/client.ts';
import type { JobContext } from '../../../jobs/job.ts';
import { stableJobId } from '../../../jobs/stable-id.ts';
import { newId } from '../../../lib/ids.ts';
import { generateKeyPair } from '../../../ssh/index.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { targetFor } from '../machines.ts';
import { sendProvision } from '../managed/job-kinds.ts';
import { expireOperation } from '../expire.ts';
import { begin } from '../lifecycle.ts';
import { managedSteps } from '../steps/names.ts';
import { createSteps } from '../steps/store.ts';
import { configuredPools, POOL_OWNER, poolKeyOf, type PoolSpec } from './pools.ts';
import { poolConvergeJob } from './job-kinds.ts';
import { retirePoolComputer } from './retire.ts';
import { planRoll, type RollMember } from './roll.ts';
import { READY_VERSION } from '../program-template.ts';

type Ctx = Pick<JobContext, 'send' | 'log' | 'signal'>;

const HEALTH_TIMEOUT_MS = 10_000;
const CLAIM_RECHECK_SLACK_MS = 1_000;
// One advisory lock for every pool's fill and shrink: two convergences (two replicas, a cron run
// and a refill after a claim) never both count a pool short and fill it twice.
const POOL_LOCK = 0x706f6f6c;

/**
 * Brings every pool of the organization (or of every organization with a pool) to its size:
 * claims past their deadline expire as the lifecycle declares (a claim not yet past it is looked
 * at again when it is), failed computers and those provisioned for what a pool no longer is
 * (template edited, size 0, template deleted) are destroyed, then each pool is filled with new
 * computers or shrunk, newest first. With `healthCheck`, every ready computer must answer a
 * command over SSH first; one that does not is destroyed and so replaced. Claimed computers are no
 * longer the pool's and are never touched. A program template's pool is planned by roll.ts (its
 * strategy toward the current version); while it rolls, the convergence comes back in a moment.
 */
export async function convergePools(deps: ComputerJobDeps, ctx: Ctx, opts: { organizationId?: string; healthCheck?: boolean }) {
  const organizations = opts.organizationId ? [opts.organizationId] : await organizationsWithPools(deps.db);
  for (const organizationId of organizations) await convergeOrganization(deps, ctx, organizationId, opts.healthCheck ?? false);
}

async function organizationsWithPools(db: Db): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM organizations WHERE warm_pool_defaults <> '{}'::jsonb
    UNION SELECT organization_id FROM computer_templates WHERE warm_pool_size > 0 AND deleted_at IS NULL
    UNION SELECT organization_id FROM computers WHERE owner_kind = ${POOL_OWNER.kind} AND deleted_at IS NULL`;
  return rows.map((r) => r.id);
}

async function convergeOrganization(deps: ComputerJobDeps, ctx: Ctx, organizationId: string, healthCheck: boolean) {
  const queue = { send: ctx.send };
  const retire = (c: Pick<Computer, 'id' | 'operation'>, why: string) => {
    ctx.log.info({ computerId: c.id, organizationId }, `destroying a pool computer: ${why}`);
    return deps.db.$transaction((tx) => retirePoolComputer(tx, { queue, managed: deps.managed }, c.id, c.operation, deps.clock.now()));
  };
  const specs = new Map((await configuredPools(deps.db, organizationId)).map((s) => [poolKeyOf(s), s]));
  const now = deps.clock.now();
  let failed = 0;
  for (const c of await poolComputers(deps.db, organizationId)) {
    if (c.operation === 'claim') {
      // What a claim's expiry means is the lifecycle's to say (the reaper asks it too): destroyed.
      if (c.operationDeadline && c.operationDeadline < now) {
        if (await expireOperation(deps, queue, c.id, now)) ctx.log.info({ computerId: c.id, organizationId }, 'expired a claim that never finished');
      }
      // A claim still in flight may be one whose control plane died: look again once its deadline
      // has passed, so the pool heals then rather than at the next minute's run.
      else if (c.operationDeadline)
        await ctx.send(poolConvergeJob, { organizationId }, { startAfter: new Date(c.operationDeadline.getTime() + CLAIM_RECHECK_SLACK_MS) });
    } else if (c.status === 'error') {
      await retire(c, 'provisioning failed');
      failed++;
    } else if (!fits(deps, c, specs)) {
      await retire(c, 'its pool changed');
    } else if (healthCheck && c.status === 'active' && c.operation === null && !(await healthy(deps, c, ctx.signal))) {
      await retire(c, 'it failed its health check');
    }
  }
  const rolling = await deps.db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${POOL_LOCK}::bigint)`;
    const live = (await poolComputers(tx, organizationId)).filter((c) => c.operation !== 'claim' && c.status !== 'error');
    const usable = await usableVersions(tx, [...specs.values()]);
    let anyRolling = false;
    for (const spec of specs.values()) {
      const mine = live.filter((c) => keyOf(c) === poolKeyOf(spec));
      if (spec.program) {
        const plan = planRoll({ ...spec.program, size: spec.size, usable }, mine.map(rollMember));
        for (const m of plan.retire) {
          ctx.log.info({ computerId: m.id, organizationId, versionId: m.versionId }, 'destroying a pool computer: its pool rolls or shrinks');
          await retirePoolComputer(tx, { queue, managed: deps.managed }, m.id, mine.find((c) => c.id === m.id)!.operation, deps.clock.now());
        }
        for (let n = 0; n < plan.add; n++) await addPoolComputer(tx, deps, queue, organizationId, spec);
        anyRolling ||= plan.rolling;
        continue;
      }
      if (!deps.provisioner.providers.get(spec.provider)) {
        ctx.log.warn({ organizationId, provider: spec.provider }, 'a warm pool names a provider this control plane lacks');
        continue;
      }
      for (let n = mine.length; n < spec.size; n++) await addPoolComputer(tx, deps, queue, organizationId, spec);
      // Provisioning ones go first (they serve no one yet), the newest first.
      const surplus = [...mine]
        .sort((a, b) => Number(a.status === 'active') - Number(b.status === 'active') || b.createdAt.getTime() - a.createdAt.getTime())
        .slice(0, Math.max(0, mine.length - spec.size));
      for (const c of surplus) await retirePoolComputer(tx, { queue, managed: deps.managed }, c.id, c.operation, deps.clock.now());
    }
    return anyRolling;
  });
  // A roll goes on in steps: look again shortly (one job per tick for every chain of runs).
  // Not while members fail to provision: a broken version would be retried every few seconds;
  // the minute's run tries again.
  if (rolling && failed === 0)
    await ctx.send(poolConvergeJob, { organizationId }, { startAfter: new Date(Date.now() + ROLL_RECHECK_MS), id: rollTickId(organizationId) });
}

/** How soon a pool in the middle of a roll is looked at again. */
const ROLL_RECHECK_MS = 2_000;

/**
 * The id of the next look at a rolling organization's pools: one per organization and tick, so the
 * runs that each ask for it (the minute's, a refill's, the roll's own) queue one job, not a chain each.
 */
function rollTickId(organizationId: string): string {
  return stableJobId(`${poolConvergeJob.name}:roll:${organizationId}:${Math.floor(Date.now() / ROLL_RECHECK_MS) + 1}`);
}

/** The versions of the program pools' templates whose preview passed. */
async function usableVersions(db: Db, specs: PoolSpec[]): Promise<Set<string>> {
  const templateIds = specs.filter((s) => s.program && s.templateId).map((s) => s.templateId!);
  if (templateIds.length === 0) return new Set();
  const versions = await db.computerTemplateVersion.findMany({ where: { templateId: { in: templateIds }, status: READY_VERSION }, select: { id: true } });
  return new Set(versions.map((v) => v.id));
}

const rollMember = (c: Computer): RollMember => ({
  id: c.id,
  versionId: c.templateVersionId,
  ready: c.status === 'active' && c.operation === null,
  createdAt: c.createdAt,
});

const poolComputers = (db: Db, organizationId: string) =>
  db.computer.findMany({ where: { organizationId, ownerKind: POOL_OWNER.kind, deletedAt: null }, orderBy: { createdAt: 'asc' } });

/** The pool a pool computer belongs to, from what it was provisioned with. */
export function keyOf(c: Pick<Computer, 'providerType' | 'source'>): string {
  const templateId = (c.source as { templateId?: string } | null)?.templateId ?? null;
  return poolKeyOf({ provider: c.providerType, templateId });
}

/** Whether the computer is still what its pool provisions: same repositories, script and size. */
function fits(deps: ComputerJobDeps, c: Computer, specs: Map<string, PoolSpec>): boolean {
  const spec = specs.get(keyOf(c));
  if (!spec) return false;
  const script = (c.source as { setupScript?: string } | null)?.setupScript;
  return (
    script === spec.setupScript &&
    c.repos.length === spec.repos.length &&
    c.repos.every((r, i) => r === spec.repos[i]) &&
    JSON.stringify(sorted(c.resources)) === JSON.stringify(sorted(deps.managed.resources))
  );
}

const sorted = (o: unknown) => Object.fromEntries(Object.entries((o ?? {}) as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)));

async function healthy(deps: ComputerJobDeps, c: Computer, signal: AbortSignal): Promise<boolean> {
  try {
    const result = await deps.ssh.exec(await targetFor(deps, c), 'true', { signal, timeoutMs: HEALTH_TIMEOUT_MS });
    return result.exitCode === 0;
  } catch {
    return false;
  }
}

/** A new pool computer, provisioned like any managed computer by the stack job (then the set-up). */
async function addPoolComputer(tx: Db, deps: ComputerJobDeps, queue: Pick<Ctx, 'send'>, organizationId: string, spec: PoolSpec) {
  const id = newId('cmp');
  const key = generateKeyPair(`agentplane-${id}`);
  const now = deps.clock.now();
  const steps = managedSteps({ repos: spec.repos, autoInstallDeps: false, setupScript: spec.setupScript !== undefined, copyWorkspace: false });
  await tx.computer.create({
    data: {
      id,
      organizationId,
      ownerKind: POOL_OWNER.kind,
      ownerId: POOL_OWNER.id,
      name: `pool-${id}`,
      liveName: `pool-${id}`,
      providerType: spec.provider,
      templateVersionId: spec.program?.currentVersionId ?? null,
      status: 'provisioning',
      isListed: false,
      repos: spec.repos,
      autoInstallDeps: false,
      source: spec.templateId
        ? { kind: 'template', templateId: spec.templateId, ...(spec.setupScript ? { setupScript: spec.setupScript } : {}) }
        : Prisma.DbNull,
      sshPublicKey: key.publicKey,
      sshKeyCiphertext: deps.secrets.seal(key.privateKey),
      resources: { ...deps.managed.resources },
      ...begin('provision', now, deps.managed),
      createdBy: POOL_OWNER.id,
      createdAt: now,
    },
  });
  await createSteps(tx, id, steps);
  await sendProvision(queue, id, tx);
}
