import { isDeepStrictEqual } from 'node:util';
import type { Db } from '../../db/client.ts';
import type { ConfigResource } from '../../generated/prisma/client.ts';
import type { ConfigDocument, Problem } from './documents.ts';
import { KINDS } from './kinds/catalog.ts';
import type { Actual, KindHandler } from './kinds/types.ts';
import type { Change, Plan } from './schemas.ts';

/** One change with what applying it needs. */
export interface Step {
  change: Change;
  handler: KindHandler;
  doc?: ConfigDocument;
  actual?: Actual;
  managed?: ConfigResource;
}

export interface PlanOptions {
  /** Who manages what this plan creates or adopts: "api" or a source's id. Prune only touches its own. */
  managedBy: string;
  prune: boolean;
  /**
   * Drift `warn`: an object this source manages whose document is unchanged since it was applied
   * is left as it is, however it was changed outside config (`fix` puts the declared values back).
   */
  keepDrift?: boolean;
  /** Is this a managed provider of the deployment? */
  isProvider(name: string): boolean;
}

/** The state a plan is computed against, read once (inside the apply's transaction when applying). */
export interface State {
  actual: Map<string, Map<string, Actual>>;
  managed: Map<string, ConfigResource>;
  secrets: Set<string>;
}

const managedKey = (kind: string, key: string) => `${kind}\u0000${key}`;

/** `kinds`: read only these kinds' objects (the others' maps stay empty). */
export async function readState(db: Db, organizationId: string, kinds?: ReadonlySet<string>): Promise<State> {
  const actual = new Map<string, Map<string, Actual>>();
  for (const handler of KINDS) {
    if (kinds && !kinds.has(handler.kind)) {
      actual.set(handler.kind, new Map());
      continue;
    }
    const rows = await handler.current(db, organizationId);
    actual.set(handler.kind, new Map(rows.map((a) => [a.key, a])));
  }
  const managed = await db.configResource.findMany({ where: { organizationId } });
  const secrets = await db.configSecret.findMany({ where: { organizationId }, select: { name: true } });
  return {
    actual,
    managed: new Map(managed.map((m) => [managedKey(m.kind, m.name), m])),
    secrets: new Set(secrets.map((s) => s.name)),
  };
}

/** Fields whose declared value differs from the object's (a field the declaration leaves undefined is not compared). */
export function changedFields(declared: Record<string, unknown>, actual: Record<string, unknown> | undefined) {
  return Object.keys(declared)
    .filter((f) => declared[f] !== undefined && !isDeepStrictEqual(declared[f], actual?.[f] ?? null))
    .map((f) => ({ field: f, old: actual?.[f] ?? null, new: declared[f] }));
}

const locate = (doc: ConfigDocument, path: (string | number)[]): Omit<Problem, 'message'> => ({
  file: doc.file,
  ...doc.at(path),
  document: `${doc.kind}/${doc.name}`,
  path: path.join('.'),
});

/**
 * Checks what a single document cannot show: one document per object, singletons once, and that
 * every secret, provider and member a document names exists (or is declared).
 */
export function checkReferences(documents: ConfigDocument[], state: State, opts: PlanOptions): Problem[] {
  const problems: Problem[] = [];
  const seen = new Map<string, ConfigDocument>();
  const declaredMembers = new Set<string>();
  for (const doc of documents) {
    const handler = KINDS.find((k) => k.kind === doc.kind)!;
    const key = handler.singleton ? doc.kind : managedKey(doc.kind, handler.key(doc.name, doc.spec));
    const first = seen.get(key);
    if (first) {
      problems.push({
        ...locate(doc, []),
        message: handler.singleton
          ? `a second ${doc.kind} document; there is one per organization (the first is ${first.kind}/${first.name} in ${first.file}:${first.at([]).line})`
          : `declares the same object as ${first.kind}/${first.name} in ${first.file}:${first.at([]).line} (${handler.key(doc.name, doc.spec)})`,
      });
    }
    seen.set(key, doc);
    if (doc.kind === 'Member') declaredMembers.add(handler.key(doc.name, doc.spec));
  }
  const members = state.actual.get('Member')!;
  for (const doc of documents) {
    const handler = KINDS.find((k) => k.kind === doc.kind)!;
    for (const use of handler.secrets?.(doc.spec) ?? []) {
      if (!state.secrets.has(use.secret)) {
        problems.push({
          ...locate(doc, use.path),
          message: `names secret "${use.secret}", which does not exist; set it with PUT /api/v0/config/secrets/${use.secret}`,
        });
      }
    }
    for (const ref of handler.references?.(doc.spec, doc.name) ?? []) {
      if (ref.kind === 'provider' && !opts.isProvider(ref.name)) {
        problems.push({ ...locate(doc, ref.path), message: `names provider "${ref.name}", which is not a managed provider of this deployment` });
      }
      if (ref.kind === 'member' && !members.has(ref.name) && !declaredMembers.has(ref.name)) {
        problems.push({
          ...locate(doc, ref.path),
          message: `names ${ref.name}, who is not a member of the organization and whom no Member document declares`,
        });
      }
    }
  }
  return problems;
}

/** Per object: create, update (which fields, old and new), delete (prune, managed objects only) or unchanged. */
export function computePlan(documents: ConfigDocument[], state: State, opts: PlanOptions): { plan: Plan; steps: Step[] } {
  const steps: Step[] = [];
  const deletes: Step[] = [];
  for (const handler of KINDS) {
    const actuals = state.actual.get(handler.kind)!;
    const declared = new Set<string>();
    for (const doc of documents.filter((d) => d.kind === handler.kind)) {
      const key = handler.key(doc.name, doc.spec);
      declared.add(key);
      const actual = actuals.get(key);
      const managed = state.managed.get(managedKey(handler.kind, key));
      const normalized = handler.normalize(doc.spec);
      const drifted =
        !!managed &&
        managed.managedBy === opts.managedBy &&
        isDeepStrictEqual((managed.declared as { spec?: unknown }).spec, JSON.parse(JSON.stringify(normalized)));
      const fields = opts.keepDrift && drifted ? [] : changedFields(normalized, actual?.spec);
      const action = !actual ? (opts.keepDrift && drifted ? 'unchanged' : 'create') : fields.length > 0 ? 'update' : 'unchanged';
      const changed = fields.map((f) => f.field);
      steps.push({
        change: {
          kind: handler.kind,
          name: doc.name,
          key,
          file: doc.file,
          action,
          adopt: !!actual && !managed,
          ...(drifted && action !== 'unchanged' ? { reverts: true } : {}),
          fields: action === 'create' ? fields.map(({ field, new: value }) => ({ field, new: value })) : fields,
          pending: action === 'unchanged' ? [] : (handler.pending?.(doc.spec, changed) ?? []),
        },
        handler,
        doc,
        actual,
        managed,
      });
    }
    if (!opts.prune) continue;
    for (const managed of state.managed.values()) {
      if (managed.kind !== handler.kind || managed.managedBy !== opts.managedBy || declared.has(managed.name)) continue;
      const actual = actuals.get(managed.name);
      const name = (managed.declared as { name?: string }).name ?? managed.name;
      deletes.unshift({
        change: {
          kind: handler.kind,
          name,
          key: managed.name,
          file: managed.file,
          action: actual ? 'delete' : 'unchanged',
          adopt: false,
          fields: [],
          pending: [],
        },
        handler,
        actual,
        managed,
      });
    }
  }
  steps.push(...deletes);
  const count = (a: Change['action']) => steps.filter((s) => s.change.action === a).length;
  const summary = { create: count('create'), update: count('update'), delete: count('delete'), unchanged: count('unchanged') };
  // Adopting alone changes no object: export then plan answers no changes.
  const hasChanges = summary.create + summary.update + summary.delete > 0;
  return { plan: { changes: steps.map((s) => s.change), summary, hasChanges }, steps };
}
