import type { PrismaClient } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';

export interface OrganizationDeps {
  db: PrismaClient;
  clock: Clock;
}

export function createOrganizationService(deps: OrganizationDeps) {
  return { deps };
}
export type OrganizationService = ReturnType<typeof createOrganizationService>;
