import type { Db, Prisma } from '../../db/client.ts';
import type { Event } from '../../generated/prisma/client.ts';
import type { EventSink } from '../../http/sse.ts';
import type { EventHub } from './hub.ts';
import { EVENTS_DROPPED } from './types.ts';
import { sseFrame, wireEvent, type WireEvent } from './wire.ts';

export interface StreamSettings {
  heartbeatMs: number;
  /** Live events held for one stream while it replays stored ones; past this it is dropped. */
  maxPendingEvents: number;
}

/** What one stream shows: its hub key, the stored events it replays, and an optional filter. */
export interface StreamScope {
  key: string;
  where: Prisma.EventWhereInput;
  accepts?: (e: WireEvent) => boolean;
}

export interface StreamDeps {
  db: Db;
  hub: EventHub;
  settings: StreamSettings;
}

const PAGE = 500;

/**
 * Streams a scope's events to a client: first the stored events after `after` (the client's
 * Last-Event-ID, or the scope's own starting point), then live ones, each id once and in order.
 * It subscribes before reading what is stored and sends a live event only when its id is past the
 * last one sent, so an event committed while the replay runs is neither lost nor sent twice.
 * `after` older than the retention window is answered with a `stream.events_dropped` event first.
 * Every heartbeat also re-checks that the caller may still watch (`stillAllowed`).
 */
export async function runEventStream(
  deps: StreamDeps,
  sink: EventSink,
  scope: StreamScope,
  after: bigint | undefined,
  stillAllowed: () => Promise<boolean>,
): Promise<void> {
  let last = after;
  let live = false;
  const pending: WireEvent[] = [];
  const accepts = scope.accepts ?? (() => true);
  const send = (e: WireEvent) => {
    if (e.id !== undefined) {
      const id = BigInt(e.id);
      if (last !== undefined && id <= last) return;
      last = id;
    }
    sink.send(sseFrame(e));
  };
  const unsubscribe = deps.hub.subscribe({
    key: scope.key,
    deliver: (e) => {
      if (!accepts(e)) return;
      if (live) return send(e);
      pending.push(e);
      if (pending.length > deps.settings.maxPendingEvents) sink.close();
    },
    end: () => sink.close(),
  });
  const beat = () => {
    if (!sink.comment('heartbeat')) return;
    stillAllowed().then(
      (ok) => ok || sink.close(),
      () => sink.close(),
    );
  };
  // Streams opened together (a reconnect storm after a restart) would otherwise re-check their
  // credentials in the same instant every interval: the first beat comes at a random point.
  let heartbeat: NodeJS.Timeout | undefined;
  const first = setTimeout(() => {
    beat();
    heartbeat = setInterval(beat, deps.settings.heartbeatMs);
  }, Math.random() * deps.settings.heartbeatMs);
  sink.onClose(() => {
    clearTimeout(first);
    clearInterval(heartbeat);
    unsubscribe();
  });

  try {
    if (last === undefined) last = deps.hub.cursor();
    const retention = await deps.db.eventRetention.findUnique({ where: { id: 1 } });
    const purgedThrough = retention?.purgedThrough ?? 0n;
    if (last < purgedThrough) {
      sink.send({
        event: EVENTS_DROPPED,
        data: JSON.stringify({
          type: EVENTS_DROPPED,
          data: {
            lastEventId: last.toString(),
            oldestRetainedId: (purgedThrough + 1n).toString(),
            detail: 'Events after your Last-Event-ID are older than the retention window and were deleted; re-read the resource, then keep streaming from here',
          },
        }),
      });
      last = purgedThrough;
    }
    for (;;) {
      if (sink.closed) return;
      const rows: Event[] = await deps.db.event.findMany({ where: { ...scope.where, id: { gt: last } }, orderBy: { id: 'asc' }, take: PAGE });
      for (const row of rows) {
        const e = wireEvent(row);
        if (accepts(e)) send(e);
        else last = row.id;
      }
      if (rows.length < PAGE) break;
    }
    live = true;
    for (const e of pending.splice(0)) send(e);
  } catch (err) {
    sink.close();
    throw err;
  }
}
