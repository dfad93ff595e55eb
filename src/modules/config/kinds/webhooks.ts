import type { z } from 'zod';
import { managerOrHigher } from '../../../auth/guards.ts';
import { BadRequest } from '../../../lib/errors.ts';
import { WebhookSpec } from '../schemas.ts';
import { defineKind } from './types.ts';

type Spec = z.infer<typeof WebhookSpec>;

const normalize = (s: Spec) => ({
  eventTypes: [...s.eventTypes].sort(),
  description: s.description ?? null,
  enabled: s.enabled ?? true,
});

/** A webhook endpoint, keyed by its URL; the signing secret is a reference used when it is created. */
export const webhookKind = defineKind<Spec>({
  kind: 'Webhook',
  spec: WebhookSpec,
  guards: [managerOrHigher],
  key: (_name, s) => s.url,
  normalize,
  secrets: (s) => (s.secretFrom ? [{ path: ['spec', 'secretFrom', 'secret'], secret: s.secretFrom.secret }] : []),
  async current(db, organizationId) {
    const rows = await db.webhookEndpoint.findMany({ where: { organizationId } });
    return rows.map((w) => ({
      key: w.url,
      resourceId: w.id,
      spec: { eventTypes: [...w.eventTypes].sort(), description: w.description, enabled: w.status === 'enabled' },
    }));
  },
  async create({ ops, principal, secret }, _name, spec) {
    const { secretFrom, enabled, ...body } = spec;
    const value = secretFrom ? await secret(secretFrom.secret) : undefined;
    // Deliveries are signed the Standard Webhooks way, which reads the secret as whsec_<base64>.
    if (value !== undefined && !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(value)) {
      throw new BadRequest(`spec.secretFrom names secret "${secretFrom!.secret}", which is not a signing secret: set it to whsec_ and base64 bytes`);
    }
    const created = await ops.webhooks.create(principal, body, value !== undefined ? { secret: value } : {});
    if (enabled === false) await ops.webhooks.update(principal, created.id, { enabled: false });
    return created.id;
  },
  async update({ ops, principal }, actual, spec, changed) {
    const n = normalize(spec) as Record<string, unknown>;
    await ops.webhooks.update(principal, actual.resourceId, Object.fromEntries(changed.map((f) => [f, n[f]])));
  },
  async remove({ ops, principal }, actual) {
    await ops.webhooks.remove(principal, actual.resourceId);
  },
  exportName: (a) => `webhook-${new URL(a.key).host.replace(/[^a-z0-9.-]/gi, '-')}`,
});
