import YAML from 'yaml';
import type { Principal } from '../../auth/principal.ts';
import type { Db } from '../../db/client.ts';
import { KINDS } from './kinds/catalog.ts';
import { readState } from './plan.ts';
import { API_VERSION } from './schemas.ts';

const withoutNulls = (spec: Record<string, unknown>) => Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== null && v !== ''));

const fileName = (kind: string) => `${kind.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase()}.yaml`;

/**
 * The organization's configuration as documents, one file per kind, so an installation can be
 * adopted: applying them back plans no change. Managed objects keep the document name they were
 * applied with. Secrets are not exported (a connection keeps its stored token).
 */
export async function exportConfig(db: Db, principal: Principal) {
  const state = await readState(db, principal.organizationId);
  const files: { path: string; content: string }[] = [];
  for (const handler of KINDS) {
    const actuals = [...state.actual.get(handler.kind)!.values()].sort((a, b) => a.key.localeCompare(b.key));
    if (actuals.length === 0) continue;
    const docs = actuals.map((actual) => {
      const managed = state.managed.get(`${handler.kind}\u0000${actual.key}`);
      const name = (managed?.declared as { name?: string } | undefined)?.name ?? handler.exportName?.(actual) ?? actual.key;
      const spec = handler.kind === 'Webhook' ? { url: actual.key, ...withoutNulls(actual.spec) } : withoutNulls(actual.spec);
      return YAML.stringify({ apiVersion: API_VERSION, kind: handler.kind, metadata: { name }, spec });
    });
    files.push({ path: fileName(handler.kind), content: docs.join('---\n') });
  }
  return { files };
}
