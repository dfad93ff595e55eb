/** One server-sent event as a client receives it. */
export interface ReceivedEvent {
  id?: string;
  event: string;
  data: any;
}

export interface SseClient {
  status: number;
  headers: Headers;
  /** Every event received so far, in order. */
  events: ReceivedEvent[];
  /** Comment lines received (heartbeats). */
  comments: string[];
  /** The id of the last event that had one: what a client sends back as Last-Event-ID. */
  lastEventId(): string | undefined;
  /** Resolves with the first event (from the start) that matches, waiting up to `timeoutMs`. */
  waitFor(match: (e: ReceivedEvent) => boolean, timeoutMs?: number, what?: string): Promise<ReceivedEvent>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

/**
 * A minimal EventSource over fetch, written from the SSE section of the HTML standard (fields
 * `id`, `event`, `data`, comments; events end at a blank line), so tests read the wire as any
 * client would. Answers non-200 responses with their status and JSON body in `events`' place.
 */
export async function connectSse(url: string, opts: { token: string; lastEventId?: string }): Promise<SseClient & { body?: any }> {
  const abort = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token}`, accept: 'text/event-stream' };
  if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
  const res = await fetch(url, { headers, signal: abort.signal });
  const events: ReceivedEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  let ended!: () => void;
  const endedPromise = new Promise<void>((resolve) => (ended = resolve));
  let last: string | undefined;
  if (res.status !== 200) {
    const body = await res.json();
    ended();
    return {
      status: res.status,
      headers: res.headers,
      body,
      events,
      comments,
      lastEventId: () => undefined,
      waitFor: () => Promise.reject(new Error(`status ${res.status}`)),
      ended: endedPromise,
      close: () => {},
    };
  }
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    let current: { id?: string; event?: string; data: string[] } = { data: [] };
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl).replace(/\r$/, '');
          buffer = buffer.slice(nl + 1);
          if (line === '') {
            if (current.data.length > 0) {
              if (current.id !== undefined) last = current.id;
              events.push({ id: current.id, event: current.event ?? 'message', data: JSON.parse(current.data.join('\n')) });
              for (const w of waiters) w();
            }
            current = { data: [] };
          } else if (line.startsWith(':')) {
            comments.push(line.slice(1).trim());
          } else {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') current.id = value;
            else if (field === 'event') current.event = value;
            else if (field === 'data') current.data.push(value);
          }
        }
      }
    } catch {
      // Aborted by close(), or the server dropped the connection.
    }
    ended();
    for (const w of waiters) w();
  })();
  let isEnded = false;
  void endedPromise.then(() => (isEnded = true));
  return {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    lastEventId: () => last,
    ended: endedPromise,
    close: () => abort.abort(),
    waitFor(match, timeoutMs = 15_000, what = 'an event') {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (found) {
            cleanup();
            resolve(found);
          } else if (isEnded) {
            cleanup();
            reject(new Error(`the stream ended before ${what}; got ${events.map((e) => e.event).join(', ')}`));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${what}; got ${events.map((e) => e.event).join(', ')}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
  };
}
