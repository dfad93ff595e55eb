import { AsyncLocalStorage } from 'node:async_hooks';
import type pg from 'pg';

const urgentLane = new AsyncLocalStorage<true>();

/**
 * Runs `fn` with its database work ahead of the queue: when every pooled connection is taken, its
 * next one goes to it before the requests waiting already. For short work that starts what a
 * person waits for (a turn taking its messages), which would otherwise wait behind a burst's
 * requests, each of them queued before it.
 */
export function urgently<T>(fn: () => Promise<T>): Promise<T> {
  return urgentLane.run(true, fn);
}

type Checkout = (err: Error | undefined, client?: pg.PoolClient, release?: (err?: Error | boolean) => void) => void;

/**
 * Gives `pool`'s connections out in two queues, urgent first (see `urgently`), each in order. The
 * pool itself never queues: a checkout is asked of it only with a connection free, and the
 * connection counts as free again when its client is released.
 */
export function prioritizeCheckouts(pool: pg.Pool, size: number): { waiting(): number } {
  let free = size;
  const waiting = { urgent: [] as (() => void)[], normal: [] as (() => void)[] };
  const give = () => {
    const next = waiting.urgent.shift() ?? waiting.normal.shift();
    if (next) next();
    else free++;
  };
  const permit = () =>
    new Promise<void>((resolve) => {
      if (free > 0) {
        free--;
        resolve();
      } else (urgentLane.getStore() ? waiting.urgent : waiting.normal).push(resolve);
    });
  const checkout = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
  const connect = async (): Promise<pg.PoolClient> => {
    await permit();
    let client: pg.PoolClient;
    try {
      client = await checkout();
    } catch (err) {
      give();
      throw err;
    }
    // The pool gives each checkout its own release; the connection is free once, whatever calls it.
    const release = client.release.bind(client);
    let released = false;
    client.release = (err?: Error | boolean) => {
      if (!released) {
        released = true;
        give();
      }
      return release(err);
    };
    return client;
  };
  // Both forms pg-pool offers: the promise, and the callback its own `query` uses.
  pool.connect = ((cb?: Checkout) => {
    if (!cb) return connect();
    connect().then(
      (client) => cb(undefined, client, client.release),
      (err: Error) => cb(err),
    );
    return undefined;
  }) as typeof pool.connect;
  return { waiting: () => waiting.urgent.length + waiting.normal.length };
}
