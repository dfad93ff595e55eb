import type { PrismaClient } from '../../db/client.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import type { Operations } from './kinds/types.ts';

export interface ConfigDeps {
  db: PrismaClient;
  clock: Clock;
  /** Seals the secrets documents name and sources' webhook secrets. */
  secrets: Pick<SecretBox, 'seal' | 'open'>;
  /** The managed providers of this deployment (pools and templates name one). */
  providers: { get(name: string): unknown };
  /** The modules' services bound to a client: apply passes its transaction, so every change commits as one. */
  operations(db: PrismaClient): Operations;
  /** Sends sources' reconciles. */
  queue: Pick<JobQueue, 'send'>;
  /** The API's public base URL, for sources' webhook URLs (undefined: the path alone). */
  publicUrl(): string | undefined;
}
