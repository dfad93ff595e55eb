import type { z } from 'zod';
import { managerOrHigher } from '../../../auth/guards.ts';
import { providerDefaults } from '../../computers/pool/pools.ts';
import { ProviderPoolSpec } from '../schemas.ts';
import { defineKind } from './types.ts';

type Spec = z.infer<typeof ProviderPoolSpec>;

/** A provider's default pool (computers made without a template); its document's name is the provider. */
export const providerPoolKind = defineKind<Spec>({
  kind: 'ProviderPool',
  spec: ProviderPoolSpec,
  guards: [managerOrHigher],
  key: (name) => name,
  normalize: (s) => ({ warmPoolSize: s.warmPoolSize }),
  references: (_s, name) => [{ path: ['metadata', 'name'], kind: 'provider', name }],
  async current(db, organizationId) {
    const org = await db.organization.findUniqueOrThrow({ where: { id: organizationId }, select: { warmPoolDefaults: true } });
    return Object.entries(providerDefaults(org.warmPoolDefaults)).map(([provider, size]) => ({
      key: provider,
      resourceId: provider,
      spec: { warmPoolSize: size },
    }));
  },
  async create({ ops, principal }, name, spec) {
    await ops.pools.setProviderPoolSize(principal, name, spec.warmPoolSize);
    return name;
  },
  async update({ ops, principal }, actual, spec) {
    await ops.pools.setProviderPoolSize(principal, actual.key, spec.warmPoolSize);
  },
  async remove({ ops, principal }, actual) {
    await ops.pools.setProviderPoolSize(principal, actual.key, 0);
  },
  pending: (s, changed) => (changed.length > 0 && s.warmPoolSize > 0 ? ['the warm pool converges to the new size'] : []),
});
