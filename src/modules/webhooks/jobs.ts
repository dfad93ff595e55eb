import { z } from 'zod';
import type { PrismaClient } from '../../db/client.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import { defineJobKind, type JobDefinition } from '../../jobs/job.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { attemptDelivery } from './deliver.ts';
import { dispatchDue } from './dispatch.ts';
import type { WebhookSettings } from './settings.ts';

/**
 * One delivery attempt. Retries after a failed answer are new attempts the dispatcher queues when
 * the schedule says (deliver.ts); the queue's own retries only cover a worker that died mid-attempt.
 */
export const webhookDeliverJob = defineJobKind({
  name: 'webhooks.deliver',
  payload: z.object({ deliveryId: z.string().min(1) }),
  retryLimit: 2,
  retryDelaySeconds: 5,
  expireInSeconds: 330,
  heartbeatSeconds: 10,
  concurrency: 16,
});

export function webhookJobs(deps: { db: PrismaClient; clock: Clock; secrets: SecretBox; egress: EgressGuard; settings: WebhookSettings }): JobDefinition[] {
  return [
    webhookDeliverJob.handledBy(async (payload, ctx) => {
      const endpointId = await attemptDelivery(deps, payload.deliveryId, ctx.signal);
      // The slot this attempt held is free: queue the endpoint's next due attempt now rather than at the next sweep.
      if (endpointId) {
        await dispatchDue(
          { db: deps.db, clock: deps.clock, endpointConcurrency: deps.settings.endpointConcurrency, send: (tx, deliveryId) => ctx.send(webhookDeliverJob, { deliveryId }, { tx }) },
          endpointId,
        );
      }
    }),
  ] as JobDefinition[];
}
