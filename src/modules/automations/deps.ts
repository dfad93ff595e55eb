import type { PrismaClient } from '../../db/client.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import type { Principal } from '../../auth/principal.ts';
import type { CreateRunBody } from '../wiki/schemas.ts';

export interface AutomationsDeps {
  db: PrismaClient;
  clock: Clock;
  secrets: SecretBox;
  /** Every forge call is made on the organization's behalf. */
  egress: Pick<EgressGuard, 'fetch'>;
  /** The wiki module: the `wiki-refresh` mode creates a wiki run of the pushed repository. */
  wiki: { createRun(caller: Principal, body: CreateRunBody): Promise<{ wikiRunId: string }> };
}
