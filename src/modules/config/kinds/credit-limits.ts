import type { z } from 'zod';
import { managerOrHigher } from '../../../auth/guards.ts';
import { BadRequest } from '../../../lib/errors.ts';
import { CreditLimitsSpec } from '../schemas.ts';
import { defineKind } from './types.ts';

type Spec = z.infer<typeof CreditLimitsSpec>;
type Entry = { email: string; limit: number | null };

const KEY = 'organization';
const BATCH = 100;

const normalize = (s: Spec) => ({
  limit: s.limit ?? null,
  users: (s.users ?? []).map((u) => ({ email: u.email.toLowerCase(), limit: u.limit })).sort((a, b) => a.email.localeCompare(b.email)),
});

/** The organization's global per-user credits limit and per-user overrides: one document at most. */
export const creditLimitsKind = defineKind<Spec>({
  kind: 'CreditLimits',
  spec: CreditLimitsSpec,
  singleton: true,
  guards: [managerOrHigher],
  key: () => KEY,
  normalize,
  references: (s) => (s.users ?? []).map((u, i) => ({ path: ['spec', 'users', i, 'email'], kind: 'member', name: u.email.toLowerCase() })),
  async current(db, organizationId) {
    const org = await db.organization.findUniqueOrThrow({ where: { id: organizationId }, select: { creditLimit: true } });
    const overrides = await db.membership.findMany({ where: { organizationId, creditLimit: { not: null } }, include: { user: true } });
    const users = overrides.map((m) => ({ email: m.user.email, limit: Number(m.creditLimit) })).sort((a, b) => a.email.localeCompare(b.email));
    if (org.creditLimit === null && users.length === 0) return [];
    return [{ key: KEY, resourceId: organizationId, spec: { limit: org.creditLimit === null ? null : Number(org.creditLimit), users } }];
  },
  async create(ctx, _name, spec) {
    await creditLimitsKind.update(ctx, { key: KEY, resourceId: ctx.principal.organizationId, spec: { limit: null, users: [] } }, spec, ['limit', 'users']);
    return ctx.principal.organizationId;
  },
  async update({ ops, principal }, actual, spec) {
    const next = normalize(spec);
    if (next.limit !== actual.spec.limit) await ops.organization.setGlobalLimit(principal, next.limit);
    const was = new Map((actual.spec.users as Entry[]).map((u) => [u.email, u.limit]));
    const wanted = new Map(next.users.map((u) => [u.email, u.limit]));
    const entries: Entry[] = [
      ...next.users.filter((u) => was.get(u.email) !== u.limit),
      ...[...was.keys()].filter((email) => !wanted.has(email)).map((email) => ({ email, limit: null })),
    ];
    for (let i = 0; i < entries.length; i += BATCH) {
      const result = await ops.organization.setUserLimits(principal, { users: entries.slice(i, i + BATCH) });
      if (result.errors.length > 0) throw new BadRequest(result.errors.map((e) => `users ${e.email}: ${e.message}`).join('; '));
    }
  },
  async remove(ctx, actual) {
    await creditLimitsKind.update(ctx, actual, {}, ['limit', 'users']);
  },
  exportName: () => 'credit-limits',
});
