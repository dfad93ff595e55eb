import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineJobKind, type JobDefinition } from '../../../jobs/job.ts';
import type { ComputerJobDeps } from '../job-deps.ts';
import { runPowerChange } from './power.ts';
import { runProvision } from './provision.ts';
import { reapComputers } from './reaper.ts';
import { OPERATIONS } from './settings.ts';
import { runTeardown } from './teardown.ts';

/**
 * Every Pulumi operation on a managed computer's stack: one queue, serialized by computer, so a
 * stack never runs two operations at once. A short heartbeat brings a killed worker's operation
 * back quickly; the handler finds where the last run stopped (steps, idempotent `pulumi up`).
 */
export const computerStackJob = defineJobKind({
  name: 'computers.stack',
  payload: z.object({ computerId: z.string().min(1), operation: z.enum(OPERATIONS) }),
  retryLimit: 3,
  retryDelaySeconds: 10,
  expireInSeconds: 3600,
  heartbeatSeconds: 10,
  serializeBy: (p) => p.computerId,
});

/**
 * The job id of a computer's first provisioning: deterministic, so sending it again (the reaper,
 * after a crash between storing a bulk's computers and queueing their jobs) enqueues nothing twice.
 */
export function provisionJobId(computerId: string): string {
  const h = createHash('sha256').update(`${computerStackJob.name}:provision:${computerId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Ends hung operations, re-queues unfinished teardowns, pauses idle computers. */
export const computersReapJob = defineJobKind({
  name: 'computers.reap',
  payload: z.object({}),
  retryLimit: 0,
  expireInSeconds: 300,
});

export function managedComputerJobs(deps: ComputerJobDeps): JobDefinition[] {
  const stack = computerStackJob.handledBy(
    async (p, ctx) => {
      if (p.operation === 'provision') return runProvision(deps, p.computerId, ctx);
      if (p.operation === 'teardown') return runTeardown(deps, p.computerId, ctx);
      return runPowerChange(deps, p.computerId, p.operation, ctx);
    },
    // Bounded per process: bulk creation provisions this many computers in parallel.
    { concurrency: deps.managed.concurrency },
  );
  return [
    stack,
    computersReapJob.handledBy(async (_p, ctx) => {
      await reapComputers(deps, ctx);
    }),
  ];
}
