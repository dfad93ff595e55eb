import { z } from 'zod';
import type { Db } from '../../../db/client.ts';
import { defineJobKind } from '../../../jobs/job.ts';
import { stableJobId } from '../../../jobs/stable-id.ts';
import type { JobQueue } from '../../../jobs/queue.ts';
import { STACK_OPERATIONS } from '../lifecycle.ts';

/**
 * Every Pulumi operation on a managed computer's stack: one queue, serialized by computer, so a
 * stack never runs two operations at once. Only Pulumi runs under it: provisioning's set-up (SSH,
 * clones, installs) is a job of its own, queued once the stack is up, so a pause or a teardown
 * never waits behind it. A short heartbeat brings a killed worker's operation back quickly; the
 * handler finds where the last run stopped (steps, idempotent `pulumi up`).
 */
export const computerStackJob = defineJobKind({
  name: 'computers.stack',
  payload: z.object({
    computerId: z.string().min(1),
    operation: z.enum(STACK_OPERATIONS),
    /** `update` only: the template version the stack moves to (the computer records it once it did). */
    templateVersionId: z.string().min(1).optional(),
  }),
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
  return stableJobId(`${computerStackJob.name}:provision:${computerId}`);
}

/** Queues a computer's provisioning (once: the job id is deterministic). */
export function sendProvision(queue: Pick<JobQueue, 'send'>, computerId: string, tx?: Db) {
  return queue.send(computerStackJob, { computerId, operation: 'provision' }, { tx, id: provisionJobId(computerId) });
}

/** Ends hung operations, re-queues unfinished teardowns, pauses idle computers. */
export const computersReapJob = defineJobKind({
  name: 'computers.reap',
  payload: z.object({}),
  retryLimit: 0,
  expireInSeconds: 300,
});
