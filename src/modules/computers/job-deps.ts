import type { PrismaClient } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import type { MachineDeps } from './machines.ts';
import type { Provisioner } from '../../provisioning/provisioner.ts';
import type { ManagedSettings } from './managed/settings.ts';

/** What the computers jobs need. */
export interface ComputerJobDeps extends MachineDeps {
  db: PrismaClient;
  clock: Clock;
  provisioner: Provisioner;
  managed: ManagedSettings;
}
