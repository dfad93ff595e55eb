import type { Db, PrismaClient } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';

/** How long a queued attempt may wait for a worker before it is queued again. */
const QUEUED_LEASE_MS = 10 * 60_000;

export interface DispatchDeps {
  db: PrismaClient;
  clock: Clock;
  endpointConcurrency: number;
  /** Sends one attempt's job inside the transaction that marks the delivery queued. */
  send(tx: Db, deliveryId: string): Promise<unknown>;
}

/**
 * Queues the attempts that are due (new deliveries, retries whose time has come, and attempts
 * whose worker died, found by their expired lease), at most `endpointConcurrency` in flight per
 * endpoint across every worker: each endpoint's row is locked while its slots are counted and
 * filled, and a dispatcher that finds it locked leaves it to the one holding it. Returns how many
 * it queued.
 */
export async function dispatchDue(deps: DispatchDeps, onlyEndpointId?: string): Promise<number> {
  const now = deps.clock.now();
  const endpoints = await deps.db.$queryRaw<{ endpoint_id: string }[]>`
    SELECT DISTINCT endpoint_id FROM webhook_deliveries
    WHERE ((status = 'pending' AND next_attempt_at <= ${now}) OR (status IN ('queued', 'sending') AND lease_until < ${now}))
      AND (${onlyEndpointId ?? null}::text IS NULL OR endpoint_id = ${onlyEndpointId ?? null})
    LIMIT 500`;
  let queued = 0;
  for (const { endpoint_id: endpointId } of endpoints) {
    queued += await deps.db.$transaction(async (tx) => {
      const [endpoint] = await tx.$queryRaw<{ status: string }[]>`
        SELECT status FROM webhook_endpoints WHERE id = ${endpointId} FOR UPDATE SKIP LOCKED`;
      if (endpoint?.status !== 'enabled') return 0;
      const [inFlight] = await tx.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM webhook_deliveries
        WHERE endpoint_id = ${endpointId} AND status IN ('queued', 'sending') AND lease_until >= ${now}`;
      const free = deps.endpointConcurrency - (inFlight?.n ?? 0);
      if (free <= 0) return 0;
      const claimed = await tx.$queryRaw<{ id: string }[]>`
        UPDATE webhook_deliveries SET status = 'queued', lease_until = ${new Date(now.getTime() + QUEUED_LEASE_MS)}, updated_at = ${now}
        WHERE id IN (
          SELECT id FROM webhook_deliveries
          WHERE endpoint_id = ${endpointId}
            AND ((status = 'pending' AND next_attempt_at <= ${now}) OR (status IN ('queued', 'sending') AND lease_until < ${now}))
          ORDER BY next_attempt_at, created_at LIMIT ${free})
        RETURNING id`;
      for (const { id } of claimed) await deps.send(tx, id);
      return claimed.length;
    });
  }
  return queued;
}
