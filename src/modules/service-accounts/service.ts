import type { PrismaClient } from '../../db/client.ts';
import type { ReadRows } from '../../db/reads.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import type { MachineDeps } from '../computers/machines.ts';
import type { RetireDeps } from '../computers/retire.ts';
import { accountOperations } from './accounts.ts';
import { apiKeyOperations } from './api-keys.ts';

export interface ServiceAccountsDeps {
  db: PrismaClient;
  clock: Clock;
  /** How hot reads run (the list): the opened database's prepared reads. */
  reads: ReadRows;
  /** Deleting an account deletes its computers; managed ones are torn down by a job. */
  computers: RetireDeps;
  /**
   * How this server reaches machines: a deleted account's registered machines have their git
   * credentials purged, and its agent-connected ones then lose their tunnel.
   */
  machines: Omit<MachineDeps, 'db'>;
  /** Where a failure after a committed delete goes, since the request still succeeded. */
  log: Logger;
}

/** Service accounts and their API keys: the rules of spec 4.3, free of HTTP. */
export function createServiceAccountsService(deps: ServiceAccountsDeps) {
  return { ...accountOperations(deps), ...apiKeyOperations(deps) };
}
export type ServiceAccountsService = ReturnType<typeof createServiceAccountsService>;
