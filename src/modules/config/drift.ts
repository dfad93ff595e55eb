import type { Db } from '../../db/client.ts';
import { kindByName } from './kinds/catalog.ts';
import { changedFields, readState } from './plan.ts';
import type { Drift } from './schemas.ts';

/** Managed objects of `managedBy` whose state differs from what was last applied to them, field by field. */
export async function findDrift(db: Db, organizationId: string, managedBy: string): Promise<Drift[]> {
  const mine = await db.configResource.findMany({ where: { organizationId, managedBy }, select: { kind: true } });
  if (mine.length === 0) return [];
  // Only the kinds this source manages are read (an unchanged reconcile runs this at every interval).
  const state = await readState(db, organizationId, new Set(mine.map((m) => m.kind)));
  const drift: Drift[] = [];
  for (const m of state.managed.values()) {
    if (m.managedBy !== managedBy || !kindByName(m.kind)) continue;
    const declared = m.declared as { name: string; spec: Record<string, unknown> };
    const actual = state.actual.get(m.kind)?.get(m.name);
    if (!actual) {
      drift.push({ kind: m.kind, name: declared.name, key: m.name, field: '(object)', declared: 'present', actual: 'deleted' });
      continue;
    }
    for (const f of changedFields(declared.spec, actual.spec)) {
      drift.push({ kind: m.kind, name: declared.name, key: m.name, field: f.field, declared: f.new, actual: f.old });
    }
  }
  return drift;
}
