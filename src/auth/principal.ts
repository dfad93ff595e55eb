import type { Role } from '../generated/prisma/enums.ts';

export type { Role };

/** Who is calling: a human user or a service account, acting inside one organization. */
export type Principal = {
  organizationId: string;
  role: Role;
  credential: 'api_key' | 'jwt';
  apiKeyId?: string;
} & ({ kind: 'user'; userId: string; email: string } | { kind: 'service_account'; serviceAccountId: string });

const RANK: Record<Role, number> = { guest: 0, user: 1, manager: 2, owner: 3 };

export function roleAtLeast(role: Role, minimum: Role): boolean {
  return RANK[role] >= RANK[minimum];
}
