import type { PrismaClient } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import type { MachineDeps } from './machines.ts';

/** What the computers jobs need. */
export interface ComputerJobDeps extends MachineDeps {
  db: PrismaClient;
  clock: Clock;
}
