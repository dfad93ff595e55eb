import { createParser } from 'eventsource-parser';
import { authorizedFetch } from './api.ts';

/** One event of a stream: its type and the event's `data` (docs/console.md has the wire shape). */
interface LiveEvent {
  id?: string;
  type: string;
  data: Record<string, unknown>;
}

export type LiveMode = 'connecting' | 'live' | 'polling';

export interface FollowOptions {
  /** The stream, e.g. `/api/v0/sessions/{id}/events`. */
  path: string;
  onEvent(event: LiveEvent): void;
  /** Re-reads the resource: on connecting, after a gap the stream reports, and as the fallback's tick. */
  refresh(): Promise<unknown> | void;
  /** How often to re-read when the server has no stream (ms), asked before each tick. */
  pollEvery(): number;
  onMode?(mode: LiveMode): void;
}

/** Statuses that say "this server has no such stream": the console then polls the resource. */
const NO_STREAM = new Set([404, 405, 501]);

/**
 * Follows a Server-Sent Events stream with the console's credential (EventSource cannot send an
 * Authorization header, so this is fetch plus a streaming SSE parser), resuming with
 * Last-Event-ID after a dropped connection. A server without the stream endpoint gets polled
 * instead, so the same page works on servers with and without live events. Returns `stop`.
 */
export function follow(options: FollowOptions): () => void {
  const abort = new AbortController();
  let stopped = false;
  let lastEventId: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const mode = (m: LiveMode) => options.onMode?.(m);

  const poll = async () => {
    if (stopped) return;
    try {
      await options.refresh();
    } catch {
      // The page shows the error the refresh met; polling goes on.
    }
    if (!stopped) timer = setTimeout(poll, options.pollEvery());
  };

  const connect = async (attempt: number): Promise<void> => {
    if (stopped) return;
    mode('connecting');
    let response: Response;
    try {
      const headers: Record<string, string> = { Accept: 'text/event-stream' };
      if (lastEventId) headers['Last-Event-ID'] = lastEventId;
      response = await authorizedFetch(options.path, { headers, signal: abort.signal });
    } catch {
      return retry(attempt);
    }
    if (NO_STREAM.has(response.status) || !response.ok || !response.body) {
      // No stream here (or not for this caller): the resource's own reads say why, as they poll.
      void response.body?.cancel();
      mode('polling');
      return poll();
    }
    mode('live');
    // Events are applied on top of a fresh read of the resource, in order: the read taken after
    // subscribing holds everything before the first event, and nothing it returns overwrites one.
    const ready = Promise.resolve(options.refresh()).catch(() => {});
    const parser = createParser({
      onEvent(message) {
        if (message.id) lastEventId = message.id;
        let envelope: { type?: string; data?: Record<string, unknown> } = {};
        try {
          envelope = JSON.parse(message.data);
        } catch {
          return;
        }
        const type = message.event ?? envelope.type ?? 'message';
        if (type === 'stream.events_dropped') {
          void ready.then(() => options.refresh()).catch(() => {});
          return;
        }
        const event = { id: message.id, type, data: envelope.data ?? envelope };
        void ready.then(() => !stopped && options.onEvent(event));
      },
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
    } catch {
      // A dropped connection: resume below.
    }
    return retry(0);
  };

  const retry = (attempt: number) => {
    if (stopped) return;
    mode('connecting');
    timer = setTimeout(() => void connect(attempt + 1), Math.min(10_000, 500 * 2 ** attempt));
  };

  void connect(0);
  return () => {
    stopped = true;
    clearTimeout(timer);
    abort.abort();
  };
}
