import { isDeepStrictEqual } from 'node:util';
import type { Principal } from '../../auth/principal.ts';
import type { Prisma } from '../../db/client.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { ConfigSource } from '../../generated/prisma/client.ts';
import type { JobContext } from '../../jobs/job.ts';
import { AppError } from '../../lib/errors.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { redactCredentials } from '../../repos/redact.ts';
import { publish } from '../events/publish.ts';
import { controlPlaneClone } from '../integrations/control-plane-clone.ts';
import { applyConfig } from './apply.ts';
import type { ConfigDeps } from './deps.ts';
import { findDrift } from './drift.ts';
import { readSourceCommit } from './git-read.ts';
import type { Drift, SourceView } from './schemas.ts';

export interface ReconcileDeps extends ConfigDeps {
  secrets: SecretBox;
  egress: Pick<EgressGuard, 'check'>;
  /** Scratch space for clones. */
  scratchRoot: string;
}

type Result = NonNullable<SourceView['status']['lastResult']>;

class SourceRefused extends Error {}

/** The person who defined the source, with their role now: a source can do no more than they can. */
async function sourcePrincipal(deps: ReconcileDeps, source: ConfigSource): Promise<Principal> {
  const membership = source.createdBy
    ? await deps.db.membership.findFirst({
        where: { organizationId: source.organizationId, userId: source.createdBy, status: 'active' },
        include: { user: true },
      })
    : null;
  if (!membership) throw new SourceRefused('the person who defined this source is no longer a member of the organization; define the source again');
  return {
    kind: 'user',
    organizationId: source.organizationId,
    userId: membership.userId,
    email: membership.user.email,
    role: membership.role,
    credential: 'api_key',
  };
}

/**
 * One reconcile of a source: read its branch's head; apply its documents when the commit is new
 * (or, with drift `fix`, when managed objects drifted); record the attempt, its result and the
 * drift found on the source; announce a failure (`config.failed`) and new drift (`config.drift`).
 * A commit that fails to apply changes nothing: the last good revision stays in force.
 */
export async function reconcileSource(deps: ReconcileDeps, sourceId: string, ctx: Pick<JobContext, 'signal' | 'log'>): Promise<void> {
  const source = await deps.db.configSource.findUnique({ where: { id: sourceId } });
  if (!source) return;
  const organizationId = source.organizationId;
  const attemptAt = deps.clock.now();
  let commit: string | null = null;
  let result: Result;
  // The drift found before reading the repository stands when nothing is applied.
  let drift: Drift[] | undefined;
  try {
    const principal = await sourcePrincipal(deps, source);
    const before = await findDrift(deps.db, organizationId, source.id);
    const reapply = source.drift === 'fix' && before.length > 0;
    let read;
    try {
      const pinned = await controlPlaneClone({ db: deps.db, secrets: deps.secrets, egress: deps.egress }, organizationId, source.repository);
      read = await readSourceCommit(deps.scratchRoot, source, pinned, ctx.signal, reapply ? undefined : source.lastAppliedCommit);
    } catch (err) {
      throw new SourceRefused(`cannot read ${redactCredentials(source.repository)} (branch ${source.branch}): ${redactCredentials((err as Error).message)}`);
    }
    commit = read.commit;
    if (!read.files) {
      drift = before;
      result = { ok: true, message: `commit ${commit.slice(0, 12)} is applied; nothing new`, revision: null };
    } else {
      const applied = await applyConfig(deps, principal, {
        files: read.files,
        prune: source.prune,
        managedBy: source.id,
        commit,
        keepDrift: source.drift === 'warn',
      });
      result = applied.revision
        ? { ok: true, message: `commit ${commit.slice(0, 12)} applied as revision ${applied.revision.number}`, revision: applied.revision.number }
        : { ok: true, message: `commit ${commit.slice(0, 12)} changes nothing`, revision: null };
    }
  } catch (err) {
    if (!(err instanceof AppError) && !(err instanceof SourceRefused)) throw err;
    const problems = err instanceof AppError ? (err.metadata?.problems as unknown[] | undefined) : undefined;
    result = { ok: false, message: err.message, revision: null, ...(problems ? { problems } : {}) };
  }
  drift ??= await findDrift(deps.db, organizationId, source.id);
  const previous = source.lastResult as Result | null;
  await deps.db.$transaction(async (tx) => {
    await tx.configSource.update({
      where: { id: source.id },
      data: {
        lastAttemptAt: attemptAt,
        lastCommit: commit ?? source.lastCommit,
        ...(result.ok && commit ? { lastAppliedCommit: commit } : {}),
        lastResult: result as unknown as Prisma.InputJsonObject,
        driftFound: drift as unknown as Prisma.InputJsonArray,
        updatedAt: attemptAt,
      },
    });
    // Announced once per failure (not at every interval while the same commit keeps failing), and on new drift.
    if (!result.ok && !(previous && !previous.ok && previous.message === result.message && source.lastCommit === commit)) {
      await publish(tx, { type: 'config.failed', organizationId, data: { sourceId: source.id, commit, message: result.message } });
    }
    if (drift.length > 0 && !isDeepStrictEqual(drift, source.driftFound as Drift[])) {
      await publish(tx, { type: 'config.drift', organizationId, data: { sourceId: source.id, mode: source.drift, drift } });
    }
  });
  ctx.log.info({ sourceId, commit, ok: result.ok, drift: drift.length }, 'config source reconciled');
}

/** Sends a reconcile for every source whose interval has passed since its last attempt. */
export async function sendDueReconciles(deps: Pick<ConfigDeps, 'db' | 'clock'>, send: (sourceId: string) => Promise<unknown>): Promise<void> {
  const now = deps.clock.now().getTime();
  const sources = await deps.db.configSource.findMany({ select: { id: true, intervalSeconds: true, lastAttemptAt: true } });
  for (const s of sources) {
    if (!s.lastAttemptAt || s.lastAttemptAt.getTime() + s.intervalSeconds * 1000 <= now + 1000) await send(s.id);
  }
}
