import type { PrismaClient } from '../../db/client.ts';
import type { Listen } from '../../db/listen.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import { EVENTS_CHANNEL } from '../events/publish.ts';
import { dispatchDue } from './dispatch.ts';
import { webhookDeliverJob } from './jobs.ts';

/** The sweep for retries coming due and attempts whose worker died, between events. */
const SWEEP_MS = 1_000;
/** Notifications within this window share one dispatch. */
const DEBOUNCE_MS = 20;

/**
 * Runs beside the job worker: queues due webhook attempts as soon as a stored event is announced
 * (its deliveries were created with it) and every second for scheduled retries. Dispatchers of
 * several workers share the work through row locks (dispatch.ts).
 */
export async function startWebhookDispatcher(deps: {
  db: PrismaClient;
  listen: Listen;
  queue: Pick<JobQueue, 'send'>;
  clock: Clock;
  log: Logger;
  endpointConcurrency: number;
}) {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let debounce: NodeJS.Timeout | undefined;

  const run = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = dispatchDue({ ...deps, send: (tx, deliveryId) => deps.queue.send(webhookDeliverJob, { deliveryId }, { tx }) })
      .then(
        () => {},
        (err: unknown) => deps.log.error({ err }, 'queueing webhook deliveries failed'),
      )
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          run();
        }
      });
  };
  const soon = () => {
    debounce ??= setTimeout(() => {
      debounce = undefined;
      run();
    }, DEBOUNCE_MS);
  };
  const unlisten = await deps.listen(EVENTS_CHANNEL, {
    // Transient events (JSON) create no deliveries.
    onPayload: (payload) => payload.startsWith('{') || soon(),
    onGap: soon,
    onError: (err) => deps.log.warn({ err }, 'the webhook dispatcher lost its listener; reconnecting'),
  });
  const sweep = setInterval(run, SWEEP_MS);
  run();
  return {
    async stop() {
      stopped = true;
      clearInterval(sweep);
      clearTimeout(debounce);
      await unlisten();
      await running;
    },
  };
}
