import type { z } from 'zod';
import { managerOrHigher } from '../../../auth/guards.ts';
import type { DeclaredAutomation } from '../../automations/declare.ts';
import type { AutomationSettings } from '../../automations/settings.ts';
import { CiAutomationSpec } from '../schemas.ts';
import { defineKind } from './types.ts';

type Spec = z.infer<typeof CiAutomationSpec>;

const sorted = <T>(xs: readonly T[]) => [...new Set(xs)].sort();

const normalize = (s: Spec) => ({
  modeId: s.modeId,
  repositories: sorted(s.repositories),
  customPrompt: s.customPrompt ?? null,
  schedule: s.schedule || null,
  githubEvents: sorted(s.githubEvents ?? []),
  params: s.params ?? {},
});

const declared = (name: string, s: Spec): DeclaredAutomation => ({
  name,
  modeId: s.modeId,
  repositories: sorted(s.repositories),
  settings: { customPrompt: s.customPrompt, schedule: s.schedule || undefined, events: s.githubEvents, params: s.params },
});

/**
 * A CI automation, keyed by its name. Its record changes in the apply's transaction; the pull
 * requests that write, rewrite or remove its workflow files follow as a queued job (the plan
 * lists them as pending, GET /automations/ci/jobs shows them).
 */
export const ciAutomationKind = defineKind<Spec>({
  kind: 'CiAutomation',
  spec: CiAutomationSpec,
  guards: [managerOrHigher],
  key: (name) => name,
  normalize,
  async current(db, organizationId) {
    const rows = await db.ciAutomation.findMany({ where: { organizationId, status: { not: 'deleted' } }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    const byName = new Map<string, (typeof rows)[number]>();
    // Names are not unique in the API: a document adopts the oldest automation of its name.
    for (const r of rows) if (!byName.has(r.name)) byName.set(r.name, r);
    return [...byName.values()].map((r) => {
      const settings = r.settings as AutomationSettings;
      return {
        key: r.name,
        resourceId: r.id,
        spec: {
          modeId: r.modeId,
          repositories: sorted((r.repos as { repoFullName: string }[]).map((x) => x.repoFullName)),
          customPrompt: settings.customPrompt ?? null,
          schedule: settings.schedule ?? null,
          githubEvents: sorted(settings.events ?? []),
          params: settings.params ?? {},
        },
      };
    });
  },
  async create({ ops, principal }, name, spec) {
    return ops.automations.create(principal, declared(name, spec));
  },
  async update({ ops, principal }, actual, spec, changed) {
    await ops.automations.update(principal, actual.resourceId, declared(actual.key, spec), changed);
  },
  async remove({ ops, principal }, actual) {
    await ops.automations.remove(principal, actual.resourceId);
  },
  pending: (s) => [`pull requests write the workflow to ${sorted(s.repositories).join(', ')} (GET /api/v0/automations/ci/jobs shows them)`],
});
