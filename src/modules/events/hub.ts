import type { PrismaClient } from '../../db/client.ts';
import type { Listen } from '../../db/listen.ts';
import type { Logger } from '../../lib/logger.ts';
import { EVENTS_CHANNEL, type TransientEvent } from './publish.ts';
import { ORGANIZATION_EVENT_TYPES } from './types.ts';
import { wireEvent, type WireEvent } from './wire.ts';

/** One connected stream, as the hub sees it. */
interface Subscriber {
  /** `session:<id>`, `computer:<id>` or `org:<id>`: the events it is offered. */
  key: string;
  deliver(event: WireEvent): void;
  /** The hub is closing (the server stops): end the stream. */
  end(): void;
}

/**
 * The process's one listener on the events channel: it reads each newly stored event once and
 * hands it to the streams connected here whose key it carries, in id order, with transient events
 * in the order they were announced relative to stored ones.
 */
export interface EventHub {
  start(): Promise<void>;
  subscribe(subscriber: Subscriber): () => void;
  /** The highest stored event id handed to subscribers so far. */
  cursor(): bigint;
  /** Streams connected to this process. */
  size(): number;
  /** Stops listening and ends every stream. */
  close(): Promise<void>;
}

const PAGE = 500;
const RETRY_MS = 1_000;

/** The hub keys an event is offered under. */
function keysOf(e: WireEvent): string[] {
  const keys: string[] = [];
  if (e.sessionId) keys.push(`session:${e.sessionId}`);
  if (e.computerId) keys.push(`computer:${e.computerId}`);
  if (e.type in ORGANIZATION_EVENT_TYPES) keys.push(`org:${e.organizationId}`);
  return keys;
}

export function createEventHub(deps: { db: PrismaClient; listen: Listen; log: Logger }): EventHub {
  const byKey = new Map<string, Set<Subscriber>>();
  let count = 0;
  let cursor = 0n;
  // The highest stored id notified: a read queued after the cursor reached it would find nothing.
  let heard = 0n;
  // Events may have been stored unheard (the listener reconnected, a read failed): read regardless.
  let unheard = false;
  let unlisten: (() => Promise<void>) | undefined;
  let closed = false;
  // Work in arrival order: 'read' (stored events after the cursor) or a transient event.
  const tasks: ('read' | WireEvent)[] = [];
  // Nothing is read before start() has fixed the starting point (the last stored id).
  let draining = true;
  let retryTimer: NodeJS.Timeout | undefined;

  const fanOut = (e: WireEvent) => {
    for (const key of keysOf(e)) {
      for (const s of byKey.get(key) ?? []) s.deliver(e);
    }
  };

  const readNew = async () => {
    for (;;) {
      const rows = await deps.db.event.findMany({ where: { id: { gt: cursor } }, orderBy: { id: 'asc' }, take: PAGE });
      for (const row of rows) {
        cursor = row.id;
        fanOut(wireEvent(row));
      }
      if (rows.length < PAGE) return;
    }
  };

  const push = (task: 'read' | WireEvent) => {
    if (closed) return;
    // Reads coalesce: one read after the last one queued serves every notification before it.
    if (task === 'read' && tasks.at(-1) === 'read') return;
    tasks.push(task);
    if (!draining) void drain();
  };

  const drain = async () => {
    draining = true;
    while (tasks.length > 0 && !closed) {
      const task = tasks.shift()!;
      try {
        if (task === 'read') {
          // A commit notifies each of its events' ids: the first one's read covers the rest.
          if (unheard) {
            unheard = false;
            await readNew();
          } else if (heard > cursor) {
            // With no stream connected there is nothing to hand on: only the point a new stream
            // starts from moves (every id up to a notified one has committed: ids commit in order).
            if (count === 0) cursor = heard;
            else await readNew();
          }
        } else fanOut(task);
      } catch (err) {
        deps.log.error({ err }, 'reading new events failed; retrying');
        clearTimeout(retryTimer);
        unheard = true;
        retryTimer = setTimeout(() => push('read'), RETRY_MS);
      }
    }
    draining = false;
  };

  const onPayload = (payload: string) => {
    if (payload.startsWith('{')) {
      let t: TransientEvent;
      try {
        t = JSON.parse(payload) as TransientEvent;
      } catch {
        return;
      }
      push({
        type: t.type,
        organizationId: t.organizationId,
        sessionId: t.sessionId,
        computerId: t.computerId,
        createdAt: new Date().toISOString(),
        data: t.data,
      });
    } else if (/^\d+$/.test(payload)) {
      const id = BigInt(payload);
      if (id > heard) heard = id;
      if (id > cursor) push('read');
    }
  };

  return {
    async start() {
      unlisten = await deps.listen(EVENTS_CHANNEL, {
        onPayload,
        onGap: () => {
          unheard = true;
          push('read');
        },
        onError: (err) => deps.log.warn({ err }, 'the events listener lost its connection; reconnecting'),
      });
      // Listening first, then the starting point: nothing committed in between is missed.
      const last = await deps.db.event.findFirst({ orderBy: { id: 'desc' }, select: { id: true } });
      if (last && last.id > cursor) cursor = last.id;
      void drain();
    },
    subscribe(subscriber) {
      let set = byKey.get(subscriber.key);
      if (!set) byKey.set(subscriber.key, (set = new Set()));
      set.add(subscriber);
      count++;
      return () => {
        if (!set.delete(subscriber)) return;
        count--;
        if (set.size === 0 && byKey.get(subscriber.key) === set) byKey.delete(subscriber.key);
      };
    },
    cursor: () => cursor,
    size: () => count,
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      await unlisten?.();
      for (const set of [...byKey.values()]) for (const s of [...set]) s.end();
      byKey.clear();
    },
  };
}
