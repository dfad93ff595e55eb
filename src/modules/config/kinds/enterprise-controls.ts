import type { z } from 'zod';
import { humanOnly, managerOrHigher } from '../../../auth/guards.ts';
import { redactCustomModelKeys } from '../../organization/custom-model-keys.ts';
import { EnterpriseControlsSpec } from '../schemas.ts';
import { defineKind } from './types.ts';

type Spec = z.infer<typeof EnterpriseControlsSpec>;

const KEY = 'organization';
const asSettings = (v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** The settings document, compared as the API shows it (custom models' keys masked); one document at most. */
export const enterpriseControlsKind = defineKind<Spec>({
  kind: 'EnterpriseControls',
  spec: EnterpriseControlsSpec,
  singleton: true,
  guards: [humanOnly, managerOrHigher],
  key: () => KEY,
  normalize: (s) => ({ settings: s.settings }),
  async current(db, organizationId) {
    const org = await db.organization.findUniqueOrThrow({ where: { id: organizationId }, select: { enterpriseSettings: true, enterpriseRevision: true } });
    if (org.enterpriseRevision === 0) return [];
    return [{ key: KEY, resourceId: organizationId, spec: { settings: redactCustomModelKeys(asSettings(org.enterpriseSettings)) } }];
  },
  async create({ ops, principal }, _name, spec) {
    await ops.organization.setEnterpriseControls(principal, spec);
    return principal.organizationId;
  },
  async update({ ops, principal }, _actual, spec) {
    await ops.organization.setEnterpriseControls(principal, spec);
  },
  async remove({ ops, principal }) {
    await ops.organization.setEnterpriseControls(principal, { settings: {} });
  },
  exportName: () => 'enterprise-controls',
});
