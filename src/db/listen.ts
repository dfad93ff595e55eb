import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

interface ListenHandlers {
  /** Each notification's payload, in the order the database sent them. */
  onPayload(payload: string): void;
  /**
   * Notifications may have been missed (the connection dropped and came back): re-read what they
   * would have announced.
   */
  onGap(): void;
  /** A dropped connection or a failed reconnect (retried with backoff). */
  onError(err: unknown): void;
}

/** Receives a channel's notifications until the returned function is called. */
export type Listen = (channel: string, handlers: ListenHandlers) => Promise<() => Promise<void>>;

/** The embedded database hands notifications to in-process listeners; nothing can drop. */
export function pgliteListen(pglite: PGlite): Listen {
  return async (channel, handlers) => pglite.listen(channel, handlers.onPayload);
}

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

/**
 * PostgreSQL: one dedicated connection per listener (a pooled one would lose its LISTEN), with
 * TCP keepalive, reconnected with backoff when it drops; after each reconnect `onGap` runs, so the
 * listener re-reads what it may have missed.
 */
export function postgresListen(connectionString: string): Listen {
  return async (channel, handlers) => {
    let client: pg.Client | undefined;
    let closed = false;
    let delay = RECONNECT_MIN_MS;
    let timer: NodeJS.Timeout | undefined;

    const connect = async (): Promise<void> => {
      const c = new pg.Client({ connectionString, keepAlive: true });
      c.on('notification', (n) => {
        if (n.channel === channel) handlers.onPayload(n.payload ?? '');
      });
      c.on('error', (err) => {
        handlers.onError(err);
        retry(c);
      });
      c.on('end', () => retry(c));
      await c.connect();
      await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      client = c;
      delay = RECONNECT_MIN_MS;
    };

    const retry = (failed: pg.Client) => {
      if (closed || client !== failed) return;
      client = undefined;
      failed.end().catch(() => {});
      schedule();
    };

    const schedule = () => {
      timer = setTimeout(() => {
        connect().then(
          () => handlers.onGap(),
          (err: unknown) => {
            handlers.onError(err);
            delay = Math.min(delay * 2, RECONNECT_MAX_MS);
            if (!closed) schedule();
          },
        );
      }, delay);
    };

    await connect();
    return async () => {
      closed = true;
      clearTimeout(timer);
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    };
  };
}
