import type { z } from 'zod';
import { managerOrHigher } from '../../../auth/guards.ts';
import { BadRequest } from '../../../lib/errors.ts';
import { SourceControlIntegrationSpec } from '../schemas.ts';
import { defineKind } from './types.ts';

type Spec = z.infer<typeof SourceControlIntegrationSpec>;

const trimmed = (url: string) => url.replace(/\/+$/, '');
const hostOf = (url: string) => new URL(url).host.toLowerCase();

/**
 * A forge connection, keyed by host (one per host, as the API allows). The token is a secret
 * reference; the stored token is never read back, so only provider, address and user name are
 * compared. There is no update operation: a change replaces the connection (delete, then create).
 */
export const integrationKind = defineKind<Spec>({
  kind: 'SourceControlIntegration',
  spec: SourceControlIntegrationSpec,
  guards: [managerOrHigher],
  key: (_name, s) => hostOf(s.baseUrl),
  normalize: (s) => ({ provider: s.provider, baseUrl: trimmed(s.baseUrl), username: s.username }),
  secrets: (s) => (s.tokenFrom ? [{ path: ['spec', 'tokenFrom', 'secret'], secret: s.tokenFrom.secret }] : []),
  async current(db, organizationId) {
    const rows = await db.sourceControlIntegration.findMany({ where: { organizationId, origin: 'api' } });
    return rows.map((r) => ({ key: r.host, resourceId: r.id, spec: { provider: r.provider, baseUrl: r.baseUrl, username: r.username } }));
  },
  async create({ ops, principal, secret }, name, spec) {
    if (!spec.tokenFrom) throw new BadRequest(`SourceControlIntegration/${name}: spec.tokenFrom is needed to create the connection`);
    const { tokenFrom, ...body } = spec;
    return (await ops.integrations.create(principal, { ...body, token: await secret(tokenFrom.secret) })).id;
  },
  async update(ctx, actual, spec) {
    await ctx.ops.integrations.remove(ctx.principal, actual.resourceId);
    await integrationKind.create(ctx, actual.key, spec);
  },
  async remove({ ops, principal }, actual) {
    await ops.integrations.remove(principal, actual.resourceId);
  },
  exportName: (a) => a.key.replace(/[^a-z0-9.-]/g, '-'),
});
