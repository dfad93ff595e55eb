import type { Db } from '../../db/client.ts';

/**
 * Deletes events older than the retention window, by id: every id up to the newest expired one
 * goes, and the retention marker remembers that id, so a stream resuming from an older one is told
 * that events were dropped (ids are visible in commit order, so none below it can appear later).
 * Returns how many were deleted.
 */
export async function purgeExpiredEvents(db: Db, cutoff: Date): Promise<number> {
  const [row] = await db.$queryRaw<{ deleted: number }[]>`
    WITH newest AS (SELECT max(id) AS id FROM events WHERE created_at < ${cutoff}),
    deleted AS (DELETE FROM events WHERE id <= (SELECT id FROM newest) RETURNING id),
    marked AS (
      UPDATE event_retention SET purged_through = GREATEST(purged_through, (SELECT id FROM newest))
      WHERE id = 1 AND (SELECT id FROM newest) IS NOT NULL)
    SELECT count(*)::int AS deleted FROM deleted`;
  return row?.deleted ?? 0;
}
