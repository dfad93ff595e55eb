import type { Principal } from '../../../auth/principal.ts';
import { isUniqueViolation } from '../../../db/errors.ts';
import { Prisma, type Computer } from '../../../generated/prisma/client.ts';
import { generateKeyPair } from '../../../ssh/index.ts';
import type { Owner } from '../access.ts';
import type { ComputersDeps } from '../deps.ts';
import { assertNameAndHostFree, recordComputerCreated } from '../insert.ts';
import { computerSetupJob } from '../job-kinds.ts';
import { targetFor } from '../machines.ts';
import { begin, CLAIM_TIMEOUT_MS, deadlineOf, end, transition } from '../lifecycle.ts';
import type { SourcedInput } from '../source.ts';
import { assertMayAddComputer } from '../quota.ts';
import type { BulkCreateInput, ComputerView, CreateComputerInput } from '../schemas.ts';
import { STEP } from '../steps/names.ts';
import { appendSteps } from '../steps/store.ts';
import { viewOfComputer } from '../version-view.ts';
import { retirePoolComputer } from './retire.ts';
import { POOL_OWNER, poolProviderOf, REFILL_DELAY_MS } from './pools.ts';
import { isProgramTemplate, READY_VERSION } from '../program-template.ts';
import { poolConvergeJob } from './job-kinds.ts';

/**
 * The files sshd reads authorized keys from: the user's own, and the one the kubernetes image's
 * start script installs from the computer's Secret (images/computer/computer-start.sh).
 */
const KEY_FILES = ['$HOME/.ssh/authorized_keys', '/var/lib/agentplane/ssh/authorized_keys'];

/**
 * Replaces every authorized key with the one on stdin and reads each file back: answers `swapped`
 * once the new key is the only one sshd will accept (it reads the files at each login).
 */
const SWAP_KEYS = [
  'set -e; umask 077; key=$(cat); mkdir -p "$HOME/.ssh"',
  ...KEY_FILES.map((f, i) => {
    const swap = `printf '%s\\n' "$key" > "${f}.claim" && mv -f "${f}.claim" "${f}" && [ "$(cat "${f}")" = "$key" ] || exit 1`;
    return i === 0 ? swap : `if [ -w "${f}" ]; then ${swap}; fi`;
  }),
  'echo swapped',
].join('\n');

/** A pool computer marked `claim` for one request, not yet the caller's. */
interface Reserved {
  computer: Computer;
  /** How many of the request's repositories the pool computer has cloned already. */
  cloned: number;
}

/**
 * Hands a ready computer of the pool that serves this request to `owner`, or answers undefined
 * (no pool serves it, none is ready, or the claim failed: the caller provisions from scratch).
 *
 * A pool serves a request of its provider and template (none for a provider's pool) whose
 * repositories begin with the ones its computers were provisioned with; repositories after those,
 * and `autoInstallDeps`, are the request's own steps, run on the claimed computer by the set-up job.
 * The claim itself: the row is taken with `FOR UPDATE SKIP LOCKED` and marked `claim` (still owned
 * by the pool, so no user sees it), the computer's key is replaced over SSH by a new one, then the
 * row becomes the caller's in one compare-and-set transaction. A failure in between destroys the
 * computer; a control plane killed in between leaves a `claim` past its deadline, whose expiry the
 * lifecycle declares (destroyed, by the reaper or the pool's convergence, whichever comes first).
 */
export async function claimFromPool(
  deps: ComputersDeps,
  principal: Principal,
  owner: Owner,
  input: CreateComputerInput,
  sourced: SourcedInput,
  provider: string,
): Promise<ComputerView | undefined> {
  const reserved = await reserve(deps, principal, sourced, provider);
  return reserved && complete(deps, principal, owner, input, sourced, reserved);
}

/**
 * The warm part of a bulk creation: for each name in order, as long as the plan allows another
 * computer and the pool has one ready, a computer is reserved (one after another, so the plan's
 * count sees the ones before); then every reserved one is handed over at once. Answers the
 * computers by name; the names left out (none ready, the plan's limit, a failed claim) are the
 * bulk's to create from scratch, which reports a limit as it always did.
 */
export async function claimForBulk(
  deps: ComputersDeps,
  principal: Principal,
  owner: Owner,
  input: Pick<BulkCreateInput, 'repos' | 'autoInstallDeps'>,
  provider: string,
  names: string[],
): Promise<Map<string, ComputerView>> {
  const sourced: SourcedInput = { provider, repos: input.repos ?? [], autoInstallDeps: input.autoInstallDeps ?? false, isListed: true };
  const reserved: [string, Reserved][] = [];
  for (const name of names) {
    const allowed = await assertMayAddComputer(deps.db, deps.clock, principal.organizationId, owner).then(
      () => assertNameAndHostFree(deps.db, principal.organizationId, owner, name).then(() => true),
      () => false,
    );
    const r = allowed ? await reserve(deps, principal, sourced, provider) : undefined;
    if (!r) break;
    reserved.push([name, r]);
  }
  const done = await Promise.all(reserved.map(([name, r]) => complete(deps, principal, owner, { name }, sourced, r).catch(() => undefined)));
  return new Map(reserved.flatMap(([name], i) => (done[i] ? [[name, done[i]] as const] : [])));
}

async function reserve(deps: ComputersDeps, principal: Principal, sourced: SourcedInput, provider: string): Promise<Reserved | undefined> {
  const source = sourced.source;
  if (source?.kind === 'computer') return undefined;
  const templateId = source?.templateId ?? null;
  const template = templateId ? await deps.db.computerTemplate.findUnique({ where: { id: templateId } }) : null;
  if (templateId && poolProviderOf(template) !== provider) return undefined;
  const poolRepos = template?.repos ?? [];
  if (!poolRepos.every((url, i) => sourced.repos[i] === url)) return undefined;
  const now = deps.clock.now();
  // A program template's member runs a version whose preview passed, the current one first.
  const versioned = isProgramTemplate(template)
    ? Prisma.sql`AND template_version_id IN (
        SELECT id FROM computer_template_versions WHERE template_id = ${templateId} AND status = ${READY_VERSION})`
    : Prisma.empty;
  const [claimed] = await deps.db.$queryRaw<{ id: string }[]>`
    UPDATE computers SET operation = 'claim', operation_deadline = ${deadlineOf('claim', now)}, updated_at = ${now}
    WHERE id = (
      SELECT id FROM computers
      WHERE organization_id = ${principal.organizationId} AND owner_kind = ${POOL_OWNER.kind} AND deleted_at IS NULL
        AND status = 'active' AND operation IS NULL AND power_state = 'running'
        AND provider_type = ${provider} AND (source->>'templateId') IS NOT DISTINCT FROM ${templateId}
        AND (source->>'setupScript') IS NOT DISTINCT FROM ${template?.setupScript ?? null}
        AND repos = ${poolRepos}::text[] AND resources = ${JSON.stringify(deps.managed.resources)}::jsonb
        ${versioned}
      ORDER BY template_version_id IS NOT DISTINCT FROM ${template?.currentVersionId ?? null} DESC, created_at, id LIMIT 1
      FOR UPDATE SKIP LOCKED)
    RETURNING id`;
  if (!claimed) return undefined;
  return { computer: await deps.db.computer.findUniqueOrThrow({ where: { id: claimed.id } }), cloned: poolRepos.length };
}

async function complete(
  deps: ComputersDeps,
  principal: Principal,
  owner: Owner,
  input: Pick<CreateComputerInput, 'name' | 'hostId'>,
  sourced: SourcedInput,
  { computer, cloned }: Reserved,
): Promise<ComputerView | undefined> {
  // Not awaited, and a moment later: a burst of claims is not slowed by provisioning their
  // replacements (pulumi up competes for the CPU of the process that answers the claims).
  const refill = () =>
    void deps.queue
      .send(poolConvergeJob, { organizationId: principal.organizationId }, { startAfter: new Date(Date.now() + REFILL_DELAY_MS) })
      .catch(() => undefined);
  const key = generateKeyPair(`agentplane-${computer.id}`);
  try {
    await swapKey(deps, computer, key);
  } catch {
    // The machine may hold either key now: it is no one's, and the pool replaces it.
    await deps.db.$transaction((tx) => retirePoolComputer(tx, deps, computer.id, 'claim', deps.clock.now()));
    refill();
    return undefined;
  }
  try {
    return await handOver(deps, principal, owner, input, sourced, computer, key, cloned);
  } catch (err) {
    // Still the pool's, with the new key on the machine: it stays in the pool with that key.
    await transition(deps.db, computer.id, {
      from: { operation: 'claim', ownerKind: POOL_OWNER.kind },
      to: { sshPublicKey: key.publicKey, sshKeyCiphertext: deps.secrets.seal(key.privateKey), ...end() },
    });
    if (isUniqueViolation(err)) {
      await assertNameAndHostFree(deps.db, principal.organizationId, owner, input.name, input.hostId);
    }
    throw err;
  } finally {
    refill();
  }
}

/**
 * Installs the new key as the only authorized one, over the pool key's connection (usually still
 * open from the pool's set-up or health check). Logging in with the new key is left to its owner:
 * a second SSH handshake in the request would double a claim's time (docs/api-decisions.md).
 */
async function swapKey(deps: ComputersDeps, computer: Computer, key: { publicKey: string; privateKey: string }) {
  const timeoutMs = CLAIM_TIMEOUT_MS / 2;
  const swapped = await deps.ssh.exec(await targetFor(deps, computer), SWAP_KEYS, { stdin: key.publicKey, signal: AbortSignal.timeout(timeoutMs), timeoutMs });
  if (swapped.exitCode !== 0 || swapped.stdout.trim() !== 'swapped') {
    throw new Error(`replacing the pool key failed: ${swapped.stderr.trim() || `exit ${swapped.exitCode}`}`);
  }
}

/** Makes the claimed computer the caller's, in one transaction; its own steps follow as the set-up job. */
async function handOver(
  deps: ComputersDeps,
  principal: Principal,
  owner: Owner,
  input: Pick<CreateComputerInput, 'name' | 'hostId'>,
  sourced: SourcedInput,
  computer: Computer,
  key: { publicKey: string; privateKey: string },
  cloned: number,
): Promise<ComputerView> {
  const now = deps.clock.now();
  const own = [
    ...sourced.repos.slice(cloned).map((url, i) => ({ id: STEP.clone(cloned + i + 1), name: `Cloning ${url}` })),
    ...(sourced.autoInstallDeps ? [{ id: STEP.installDeps, name: 'Installing dependencies' }] : []),
  ];
  const pending = own.length > 0;
  const data: Prisma.ComputerUpdateManyMutationInput = {
    ownerKind: owner.kind,
    ownerId: owner.id,
    name: input.name,
    liveName: input.name,
    hostId: input.hostId ?? null,
    liveHostId: input.hostId ?? null,
    isListed: sourced.isListed,
    source: (sourced.source ?? undefined) as Prisma.InputJsonValue | undefined,
    repos: sourced.repos,
    autoInstallDeps: sourced.autoInstallDeps,
    sshPublicKey: key.publicKey,
    sshKeyCiphertext: deps.secrets.seal(key.privateKey),
    createdBy: principal.kind === 'user' ? principal.userId : principal.serviceAccountId,
    createdAt: now,
    lastActiveAt: now,
    status: pending ? 'provisioning' : 'active',
    ...(pending ? begin('provision', now, deps.managed) : end(null)),
  };
  const created = await deps.db.$transaction(async (tx) => {
    const handed = await transition(tx, computer.id, { from: { operation: 'claim', ownerKind: POOL_OWNER.kind, deletedAt: null }, to: data });
    if (!handed) throw new Error(`pool computer ${computer.id} was taken back during its claim`);
    if (pending)
      await appendSteps(
        tx,
        computer.id,
        own.map((s) => ({ ...s, status: 'pending' })),
      );
    await recordComputerCreated(
      tx,
      principal,
      computer.id,
      pending ? 'provisioning' : 'active',
      {
        name: input.name,
        providerType: computer.providerType,
        ownerId: owner.id,
        fromWarmPool: true,
        ...(computer.templateVersionId ? { templateVersionId: computer.templateVersionId } : {}),
      },
      now,
    );
    if (pending) await deps.queue.send(computerSetupJob, { computerId: computer.id }, { tx });
    return tx.computer.findUniqueOrThrow({
      where: { id: computer.id },
      include: { provisioningSteps: { orderBy: { position: 'asc' } } },
    });
  });
  return viewOfComputer(deps.db, created, deps.relayUrls);
}
