import type { PrismaClient } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { endTurn } from './store.ts';

/**
 * A running turn beats every few seconds; a crashed worker's turn is retried within about
 * twenty seconds. A session silent for this long has no worker left: every retry is spent.
 */
export const STUCK_AFTER_MS = 3 * 60_000;

export const STOPPED_TURN =
  'The agent stopped unexpectedly: the worker running this turn stopped responding and could not be restarted. Send a message to continue.';

/**
 * Ends turns no worker runs any more (status running, heartbeat stale: subagent sessions, whose
 * parent died, included) with an error note, and re-sends the turn job of sessions pending for
 * as long (their job was lost; a turn paused for approvals waits for its decisions instead), so
 * no session stays running or pending for good.
 */
export async function reapStuckTurns(
  deps: { db: PrismaClient; clock: Clock },
  resend: (sessionId: string) => Promise<unknown>,
): Promise<{ ended: number; resent: number }> {
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - STUCK_AFTER_MS);
  const stale = { OR: [{ turnHeartbeatAt: { lt: cutoff } }, { turnHeartbeatAt: null, updatedAt: { lt: cutoff } }] };
  const running = await deps.db.session.findMany({ where: { status: 'running', ...stale }, select: { id: true, turnHeartbeatAt: true } });
  let ended = 0;
  for (const s of running) {
    // Compare-and-set on the heartbeat: a worker that came back meanwhile keeps its turn.
    const done = await deps.db.$transaction((tx) => endTurn(tx, s.id, now, { note: STOPPED_TURN, heartbeat: s.turnHeartbeatAt }));
    if (done) ended++;
  }
  const pending = await deps.db.session.findMany({
    where: { status: 'pending', turnPausedAt: null, deletedAt: null, updatedAt: { lt: cutoff } },
    select: { id: true },
  });
  for (const s of pending) {
    await deps.db.session.update({ where: { id: s.id }, data: { updatedAt: now } });
    await resend(s.id);
  }
  return { ended, resent: pending.length };
}
