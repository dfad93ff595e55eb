import type { PrismaClient } from '../../db/client.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/secret-box.ts';

export interface IntegrationsDeps {
  db: PrismaClient;
  clock: Clock;
  secrets: SecretBox;
  /** Forges are reached on the organization's behalf: screened on create, every call through its fetch. */
  egress: Pick<EgressGuard, 'screen' | 'fetch'>;
}
