import type { z } from 'zod';
import { managerOrHigher } from '../../../auth/guards.ts';
import { poolUpdateOf } from '../../computer-templates/views.ts';
import { ComputerTemplateSpec } from '../schemas.ts';
import { defineKind } from './types.ts';

type Spec = z.infer<typeof ComputerTemplateSpec>;

const normalize = (s: Spec) => ({
  provider: s.provider ?? null,
  repos: s.repos ?? [],
  autoInstallDeps: s.autoInstallDeps ?? false,
  setupScript: s.setupScript ?? null,
  warmPoolSize: s.warmPoolSize ?? 0,
  program: s.program ?? null,
  poolUpdate: s.poolUpdate ?? { type: 'OnReplenish' },
  registrationTimeoutSeconds: s.registrationTimeoutSeconds ?? 600,
});

export const computerTemplateKind = defineKind<Spec>({
  kind: 'ComputerTemplate',
  spec: ComputerTemplateSpec,
  guards: [managerOrHigher],
  key: (name) => name,
  normalize,
  references: (s) => (s.provider ? [{ path: ['spec', 'provider'], kind: 'provider', name: s.provider }] : []),
  async current(db, organizationId) {
    const rows = await db.computerTemplate.findMany({ where: { organizationId, deletedAt: null } });
    return rows.map((t) => ({
      key: t.name,
      resourceId: t.id,
      spec: {
        provider: t.provider,
        repos: t.repos,
        autoInstallDeps: t.autoInstallDeps,
        setupScript: t.setupScript,
        warmPoolSize: t.warmPoolSize,
        program: t.programRepository ? { repository: t.programRepository, path: t.programPath ?? '', ref: t.programRef } : null,
        poolUpdate: poolUpdateOf(t),
        registrationTimeoutSeconds: t.registrationTimeoutSeconds,
      },
    }));
  },
  async create({ ops, principal }, name, spec) {
    return (await ops.templates.create(principal, { ...spec, name })).id;
  },
  async update({ ops, principal }, actual, spec, changed) {
    const next = normalize(spec) as Record<string, unknown>;
    await ops.templates.update(principal, actual.resourceId, Object.fromEntries(changed.map((f) => [f, next[f]])));
  },
  async remove({ ops, principal }, actual) {
    await ops.templates.remove(principal, actual.resourceId);
  },
  pending: (s, changed) => [
    ...(changed.includes('warmPoolSize') || ((s.warmPoolSize ?? 0) > 0 && changed.length > 0) ? ['the warm pool converges to the new size'] : []),
    ...(changed.includes('program') && s.program ? ["the program's ref is resolved and its commit previewed"] : []),
  ],
});
