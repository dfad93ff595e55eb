import type { PrismaClient } from '../../db/client.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import type { ProviderRegistry } from '../../provisioning/providers/registry.ts';
import type { RelayUrls } from '../../relay/urls.ts';
import type { MachineDeps } from './machines.ts';
import type { ManagedSettings } from './managed/settings.ts';

export interface ComputersDeps extends MachineDeps {
  db: PrismaClient;
  clock: Clock;
  providers: ProviderRegistry;
  queue: Pick<JobQueue, 'send'>;
  managed: ManagedSettings;
  /** The relay's public addresses (relayAgentUrl for registrations, relayClientUrl on every computer). */
  relayUrls?: RelayUrls;
}
