import type { PrismaClient } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';

export interface ServiceAccountsDeps {
  db: PrismaClient;
  clock: Clock;
}

export function createServiceAccountsService(deps: ServiceAccountsDeps) {
  return { deps };
}
export type ServiceAccountsService = ReturnType<typeof createServiceAccountsService>;
