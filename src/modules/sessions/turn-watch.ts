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

/** A watched turn: its session, what to do with the row read, its last heartbeat. */
interface Watched {
  sessionId: string;
  seen(row: { interruptRequestedAt: Date | null; deletedAt: Date | null } | undefined): void;
  lastBeat: number;
}

/** Session ids per read: a short IN list even with a thousand turns running. */
const READ_CHUNK = 500;

/**
 * Every turn a process watches at one interval, read together: one query per interval for all of
 * them (and one heartbeat write for those due) instead of one per turn, so hundreds of running
 * turns cost a few queries a second.
 */
class WatchGroup {
  readonly #watched = new Set<Watched>();
  #timer: NodeJS.Timeout | undefined;
  #busy = false;

  readonly db: Db;
  readonly clock: Clock;
  readonly intervalMs: number;

  constructor(db: Db, clock: Clock, intervalMs: number) {
    this.db = db;
    this.clock = clock;
    this.intervalMs = intervalMs;
  }

  add(w: Watched): void {
    this.#watched.add(w);
    this.#timer ??= setInterval(() => void this.tick(), this.intervalMs);
    void this.tick();
  }

  remove(w: Watched): void {
    this.#watched.delete(w);
    if (this.#watched.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  async tick(): Promise<void> {
    if (this.#busy || this.#watched.size === 0) return;
    this.#busy = true;
    try {
      const now = this.clock.now();
      const list = [...this.#watched];
      for (let i = 0; i < list.length; i += READ_CHUNK) {
        const chunk = list.slice(i, i + READ_CHUNK);
        const rows = await this.db.session.findMany({
          where: { id: { in: chunk.map((w) => w.sessionId) } },
          select: { id: true, interruptRequestedAt: true, deletedAt: true },
        });
        const byId = new Map(rows.map((r) => [r.id, r]));
        for (const w of chunk) if (this.#watched.has(w)) w.seen(byId.get(w.sessionId));
      }
      const due = list.filter((w) => this.#watched.has(w) && now.getTime() - w.lastBeat >= HEARTBEAT_INTERVAL_MS);
      if (due.length > 0) {
        await this.db.session.updateMany({ where: { id: { in: due.map((w) => w.sessionId) }, status: 'running' }, data: { turnHeartbeatAt: now } });
        for (const w of due) w.lastBeat = now.getTime();
      }
    } catch {
      // A failed read is retried on the next tick; the turn itself reports database trouble.
    } finally {
      this.#busy = false;
    }
  }
}

const groups = new WeakMap<Db, Map<string, WatchGroup>>();

function groupFor(db: Db, clock: Clock, intervalMs: number): WatchGroup {
  let byInterval = groups.get(db);
  if (!byInterval) groups.set(db, (byInterval = new Map()));
  // Keyed by the clock too: tests give turns clocks of their own.
  const key = `${intervalMs}`;
  let group = byInterval.get(key);
  if (!group || group.clock !== clock) byInterval.set(key, (group = new WatchGroup(db, clock, intervalMs)));
  return group;
}

/**
 * Watches a running turn's session row: interrupts come from any replica through the database
 * (POST interrupt sets `interruptRequestedAt`), so an indexed read per interval works on PGlite
 * and PostgreSQL alike; every turn of the process is read in the same query (WatchGroup). Also
 * beats `turnHeartbeatAt`, so the reaper can tell a live turn from one whose worker died.
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

  const group = groupFor(db, clock, intervalMs);
  const watched: Watched = {
    sessionId,
    lastBeat: 0,
    seen: (row) => {
      if (!row || row.deletedAt) abort('deleted');
      else if (row.interruptRequestedAt) abort('interrupt');
    },
  };
  group.add(watched);
  return {
    signal: controller.signal,
    cause: () => cause,
    stop: () => {
      group.remove(watched);
      workerSignal.removeEventListener('abort', onWorkerAbort);
    },
  };
}
