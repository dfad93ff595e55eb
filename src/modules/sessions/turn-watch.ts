import type { Db } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';

/** Why a running turn was stopped from outside. */
type StopCause = 'interrupt' | 'deleted' | 'shutdown';

export interface TurnWatch {
  /** Aborts when the user interrupts, the session is deleted, or the worker must stop. */
  readonly signal: AbortSignal;
  cause(): StopCause | undefined;
  stop(): void;
}

/** How often the interrupt flag is read: the bound on how long an interrupt takes to act. */
const WATCH_INTERVAL_MS = 250;
/** How often the heartbeat is written; the reaper gives up on a session after many missed beats. */
const HEARTBEAT_INTERVAL_MS = 5_000;

/**
 * Watches a running turn's session row: interrupts come from any replica through the database
 * (POST interrupt sets `interruptRequestedAt`), so one indexed primary-key read per interval
 * works on PGlite and PostgreSQL alike. Also beats `turnHeartbeatAt`, so the reaper can tell a
 * live turn from one whose worker died.
 */
export function watchTurn(db: Db, clock: Clock, sessionId: string, workerSignal: AbortSignal, intervalMs = WATCH_INTERVAL_MS): TurnWatch {
  const controller = new AbortController();
  let cause: StopCause | undefined;
  const abort = (why: StopCause) => {
    if (controller.signal.aborted) return;
    cause = why;
    controller.abort(new Error(`turn stopped: ${why}`));
  };
  const onWorkerAbort = () => abort('shutdown');
  workerSignal.addEventListener('abort', onWorkerAbort, { once: true });
  if (workerSignal.aborted) onWorkerAbort();

  let lastBeat = 0;
  let busy = false;
  const tick = async () => {
    if (busy || controller.signal.aborted) return;
    busy = true;
    try {
      const now = clock.now();
      const row = await db.session.findUnique({ where: { id: sessionId }, select: { interruptRequestedAt: true, deletedAt: true } });
      if (!row || row.deletedAt) abort('deleted');
      else if (row.interruptRequestedAt) abort('interrupt');
      else if (now.getTime() - lastBeat >= HEARTBEAT_INTERVAL_MS) {
        await db.session.updateMany({ where: { id: sessionId, status: 'running' }, data: { turnHeartbeatAt: now } });
        lastBeat = now.getTime();
      }
    } catch {
      // A failed read is retried on the next tick; the turn itself reports database trouble.
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), intervalMs);
  void tick();
  return {
    signal: controller.signal,
    cause: () => cause,
    stop: () => {
      clearInterval(timer);
      workerSignal.removeEventListener('abort', onWorkerAbort);
    },
  };
}
