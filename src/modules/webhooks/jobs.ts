import { z } from 'zod';
import type { PrismaClient } from '../../db/client.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import { defineJobKind, type JobDefinition } from '../../jobs/job.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import { attemptDelivery } from './deliver.ts';
import { claimDue, dispatchDue } from './dispatch.ts';
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

/** Attempts one job makes in a row for a busy endpoint before it hands on to a new job. */
const DRAIN_MAX = 100;

export function webhookJobs(deps: { db: PrismaClient; clock: Clock; secrets: SecretBox; egress: EgressGuard; settings: WebhookSettings }): JobDefinition[] {
  return [
    webhookDeliverJob.handledBy(async (payload, ctx) => {
      // The slot this attempt holds passes to the endpoint's next due attempt, in this same job:
      // a busy endpoint is drained without a queue round trip per delivery.
      let deliveryId: string | undefined = payload.deliveryId;
      let endpointId: string | undefined;
      for (let n = 0; deliveryId && n < DRAIN_MAX && !ctx.signal.aborted; n++) {
        endpointId = await attemptDelivery(deps, deliveryId, ctx.signal);
        if (!endpointId) break;
        const id: string = endpointId;
        [deliveryId] = await deps.db.$transaction((tx) => claimDue(tx, id, deps.clock.now(), deps.settings.endpointConcurrency, 1, { wait: true }));
      }
      if (deliveryId) await ctx.send(webhookDeliverJob, { deliveryId });
      else if (endpointId) {
        // Slots freed while this ran (another attempt finished, a retry came due) are filled now, not at the next sweep.
        await dispatchDue(
          {
            db: deps.db,
            clock: deps.clock,
            endpointConcurrency: deps.settings.endpointConcurrency,
            send: (tx, id) => ctx.send(webhookDeliverJob, { deliveryId: id }, { tx }),
          },
          endpointId,
        );
      }
    }),
  ];
}
