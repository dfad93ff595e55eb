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
      const claimed = await claimDue(tx, endpointId, now, deps.endpointConcurrency, deps.endpointConcurrency);
      for (const id of claimed) await deps.send(tx, id);
      return claimed.length;
    });
  }
  return queued;
}

/**
 * Marks up to `limit` of an endpoint's due attempts queued, within its free slots, under a lock on
 * its row (skipped, with nothing claimed, when another holds it and `wait` is not set, or when the
 * endpoint is not enabled). A finishing attempt waits: it must not lose its slot to a dispatcher
 * that skipped the endpoint because the attempt held the lock.
 * Call it in a transaction: the lock holds until it ends.
 */
export async function claimDue(tx: Db, endpointId: string, now: Date, bound: number, limit: number, opts: { wait?: boolean } = {}): Promise<string[]> {
  const [endpoint] = opts.wait
    ? await tx.$queryRaw<{ status: string }[]>`SELECT status FROM webhook_endpoints WHERE id = ${endpointId} FOR UPDATE`
    : await tx.$queryRaw<{ status: string }[]>`SELECT status FROM webhook_endpoints WHERE id = ${endpointId} FOR UPDATE SKIP LOCKED`;
  if (endpoint?.status !== 'enabled') return [];
  const [inFlight] = await tx.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM webhook_deliveries
    WHERE endpoint_id = ${endpointId} AND status IN ('queued', 'sending') AND lease_until >= ${now}`;
  const free = Math.min(limit, bound - (inFlight?.n ?? 0));
  if (free <= 0) return [];
  const claimed = await tx.$queryRaw<{ id: string }[]>`
    UPDATE webhook_deliveries SET status = 'queued', lease_until = ${new Date(now.getTime() + QUEUED_LEASE_MS)}, updated_at = ${now}
    WHERE id IN (
      SELECT id FROM webhook_deliveries
      WHERE endpoint_id = ${endpointId}
        AND ((status = 'pending' AND next_attempt_at <= ${now}) OR (status IN ('queued', 'sending') AND lease_until < ${now}))
      ORDER BY next_attempt_at, created_at LIMIT ${free})
    RETURNING id`;
  return claimed.map((c) => c.id);
}
