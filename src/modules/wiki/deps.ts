import type { PrismaClient } from '../../db/client.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import type { ResolveComputerTarget } from '../../repos/computer-target.ts';
import type { VideoStorage } from './video/storage.ts';

/** What the wiki service needs, narrowly. */
export interface WikiDeps {
  db: PrismaClient;
  clock: Clock;
  queue: Pick<JobQueue, 'send'>;
  /** Supplied by the computers module: 404/403 for computers the caller cannot reach. */
  resolveComputerTarget: ResolveComputerTarget;
  /** Generation without a computer clones from the control plane's network: the URL must pass it. */
  egress: Pick<EgressGuard, 'screen'>;
  video: VideoStorage;
}
