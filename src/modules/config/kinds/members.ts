import type { z } from 'zod';
import { managerOrHigher } from '../../../auth/guards.ts';
import { BadRequest } from '../../../lib/errors.ts';
import { MemberSpec } from '../schemas.ts';
import { defineKind } from './types.ts';

type Spec = z.infer<typeof MemberSpec>;

/** A member or pending invitation, keyed by email; applying invites or changes the role as the invite endpoint does. */
export const memberKind = defineKind<Spec>({
  kind: 'Member',
  spec: MemberSpec,
  guards: [managerOrHigher],
  key: (_name, s) => s.email.toLowerCase(),
  normalize: (s) => ({ email: s.email.toLowerCase(), role: s.role }),
  async current(db, organizationId) {
    const rows = await db.membership.findMany({ where: { organizationId }, include: { user: true } });
    return rows.map((m) => ({ key: m.user.email, resourceId: m.user.email, spec: { email: m.user.email, role: m.role } }));
  },
  async create({ ops, principal }, _name, spec) {
    const result = await ops.organization.inviteUser(principal, spec);
    if (result.status === 'error') throw new BadRequest(result.error ?? `cannot invite ${spec.email}`);
    return result.email;
  },
  async update(ctx, _actual, spec) {
    await memberKind.create(ctx, '', spec);
  },
  async remove({ ops, principal }, actual) {
    await ops.organization.removeUser(principal, actual.key);
  },
  exportName: (a) => a.key,
});
