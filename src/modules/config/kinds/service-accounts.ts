import type { z } from 'zod';
import { humanOnly, managerOrHigher } from '../../../auth/guards.ts';
import { ServiceAccountSpec } from '../schemas.ts';
import { defineKind } from './types.ts';

type Spec = z.infer<typeof ServiceAccountSpec>;

const normalize = (s: Spec) => ({ description: s.description ?? '', status: s.status ?? 'active' });

/** Its document's name is the account's (immutable) name; API keys are issued through the API, never declared. */
export const serviceAccountKind = defineKind<Spec>({
  kind: 'ServiceAccount',
  spec: ServiceAccountSpec,
  guards: [humanOnly, managerOrHigher],
  key: (name) => name,
  normalize,
  async current(db, organizationId) {
    const rows = await db.serviceAccount.findMany({ where: { organizationId, status: { not: 'deleted' } } });
    return rows.map((a) => ({ key: a.name, resourceId: a.id, spec: { description: a.description ?? '', status: a.status } }));
  },
  async create({ ops, principal }, name, spec) {
    const n = normalize(spec);
    return (await ops.serviceAccounts.create(principal, { name, status: n.status, ...(n.description ? { description: n.description } : {}) })).id;
  },
  async update({ ops, principal }, actual, spec) {
    const n = normalize(spec);
    await ops.serviceAccounts.update(principal, actual.resourceId, { status: n.status, description: n.description });
  },
  async remove({ ops, principal }, actual) {
    await ops.serviceAccounts.remove(principal, actual.resourceId);
  },
});
