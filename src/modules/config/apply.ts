import { isDeepStrictEqual } from 'node:util';
import type { Principal } from '../../auth/principal.ts';
import type { Db, Prisma } from '../../db/client.ts';
import { joinedTransaction } from '../../db/joined-transaction.ts';
import { AppError, BadRequest, Forbidden } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { publish } from '../events/publish.ts';
import type { ConfigDeps } from './deps.ts';
import { invalidDocuments, parseDocuments } from './documents.ts';
import type { ApplyContext } from './kinds/types.ts';
import { checkReferences, computePlan, readState, type PlanOptions, type Step } from './plan.ts';
import { revisionView } from './revisions.ts';
import type { Plan, RevisionView } from './schemas.ts';

export interface ApplyRequest {
  files: { path: string; content: string }[];
  prune: boolean;
  /** "api", or the source applying its repository. */
  managedBy: string;
  commit?: string;
  /** A source in drift `warn` mode leaves drifted objects as they are (plan.ts). */
  keepDrift?: boolean;
}

/** Applies of one organization run one at a time (their revision numbers and prune decisions depend on it). */
const lockConfig = (tx: Db, organizationId: string) => tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`agentplane config ${organizationId}`}))`;

const planOptions = (deps: Pick<ConfigDeps, 'providers'>, req: Omit<ApplyRequest, 'files' | 'commit'>): PlanOptions => ({
  managedBy: req.managedBy,
  prune: req.prune,
  keepDrift: req.keepDrift,
  isProvider: (name) => name !== 'byom' && deps.providers.get(name) !== undefined,
});

/** Parses and checks the documents and plans them against the organization as it is; changes nothing. */
export async function planConfig(deps: ConfigDeps, db: Db, principal: Principal, req: Omit<ApplyRequest, 'commit'>) {
  const { documents, problems } = parseDocuments(req.files);
  if (problems.length > 0) throw invalidDocuments(problems);
  const state = await readState(db, principal.organizationId);
  const opts = planOptions(deps, req);
  const referenceProblems = checkReferences(documents, state, opts);
  if (referenceProblems.length > 0) throw invalidDocuments(referenceProblems);
  return { documents, state, ...computePlan(documents, state, opts) };
}

/** Every change needs its operations' own route guards: a 403 names each change the caller may not make. */
function assertMayApply(principal: Principal, steps: Step[]): void {
  const refused: string[] = [];
  for (const step of steps) {
    if (step.change.action === 'unchanged' && !step.change.adopt) continue;
    for (const guard of step.handler.guards) {
      try {
        guard(principal);
      } catch (err) {
        refused.push(`${step.change.kind}/${step.change.name}: ${(err as Error).message}`);
        break;
      }
    }
  }
  if (refused.length > 0) throw new Forbidden(`Nothing was changed; this caller may not make these changes: ${refused.join('; ')}`);
}

/** A failed operation names the document that asked for it; its status (400, 403, 409 ...) stays. */
function located(step: Step, err: unknown): unknown {
  if (!(err instanceof AppError)) return err;
  const where = step.change.file ? ` (${step.change.file})` : '';
  return new AppError(err.status, `Nothing was changed; ${step.change.kind}/${step.change.name}${where} cannot be ${step.change.action}d: ${err.message}`, {
    metadata: err.metadata,
  });
}

async function runStep(ctx: ApplyContext, step: Step): Promise<string | undefined> {
  const { change, handler, doc, actual } = step;
  if (change.action === 'create') return handler.create(ctx, doc!.name, doc!.spec);
  if (change.action === 'update') {
    await handler.update(
      ctx,
      actual!,
      doc!.spec,
      change.fields.map((f) => f.field),
    );
    return actual!.resourceId;
  }
  if (change.action === 'delete') await handler.remove(ctx, actual!);
  return actual?.resourceId;
}

/** Keeps the record of what config manages in step with the change just made. */
async function markManaged(tx: Db, organizationId: string, managedBy: string, step: Step, resourceId: string | undefined, now: Date) {
  const { change, handler, doc, managed } = step;
  if (!doc) {
    if (managed) await tx.configResource.delete({ where: { id: managed.id } });
    return;
  }
  const declared = { name: doc.name, spec: handler.normalize(doc.spec) } as Prisma.InputJsonObject;
  const same =
    managed && managed.managedBy === managedBy && managed.file === doc.file && isDeepStrictEqual(managed.declared, JSON.parse(JSON.stringify(declared)));
  if (same && change.action === 'unchanged') return;
  const data = { resourceId: resourceId ?? change.key, managedBy, file: doc.file, declared, updatedAt: now };
  await tx.configResource.upsert({
    where: { organizationId_kind_name: { organizationId, kind: change.kind, name: change.key } },
    create: { id: newId('cfr'), organizationId, kind: change.kind, name: change.key, ...data, createdAt: now },
    update: data,
  });
}

/**
 * Validates the whole set (syntax, schema, references, the caller's permission for every
 * change), then applies it through the modules' own operations in one database transaction and
 * records one revision: all of it or nothing.
 */
export async function applyConfig(deps: ConfigDeps, principal: Principal, req: ApplyRequest): Promise<{ plan: Plan; revision: RevisionView | null }> {
  const organizationId = principal.organizationId;
  return deps.db.$transaction(
    async (tx) => {
      await lockConfig(tx, organizationId);
      const { plan, steps } = await planConfig(deps, tx, principal, req);
      assertMayApply(principal, steps);
      const sealed = await tx.configSecret.findMany({ where: { organizationId }, select: { name: true, sealedValue: true } });
      const ctx: ApplyContext = {
        ops: deps.operations(joinedTransaction(tx)),
        principal,
        secret: async (name) => {
          const found = sealed.find((s) => s.name === name);
          if (!found) throw new BadRequest(`secret "${name}" does not exist`);
          return deps.secrets.open(found.sealedValue);
        },
      };
      const now = deps.clock.now();
      for (const step of steps) {
        let resourceId: string | undefined;
        try {
          resourceId = await runStep(ctx, step);
        } catch (err) {
          throw located(step, err);
        }
        await markManaged(tx, organizationId, req.managedBy, step, resourceId, now);
      }
      if (!plan.hasChanges && !steps.some((s) => s.change.adopt)) return { plan, revision: null };
      const last = await tx.configRevision.findFirst({ where: { organizationId }, orderBy: { number: 'desc' }, select: { number: true } });
      const row = await tx.configRevision.create({
        data: {
          id: newId('cfg'),
          organizationId,
          number: (last?.number ?? 0) + 1,
          actorKind: principal.kind === 'user' ? 'human' : 'service',
          actorId: principal.kind === 'user' ? principal.userId : principal.serviceAccountId,
          source: req.managedBy,
          commit: req.commit ?? null,
          plan: plan as unknown as Prisma.InputJsonObject,
          createdAt: now,
        },
      });
      await publish(tx, {
        type: 'config.applied',
        organizationId,
        data: { revisionId: row.id, number: row.number, source: row.source, commit: row.commit, summary: plan.summary },
      });
      return { plan, revision: revisionView(row) };
    },
    { timeout: 120_000, maxWait: 60_000 },
  );
}
