import type { Db, PrismaClient } from './client.ts';

/**
 * A client for services that open their own transactions (`db.$transaction(fn)`), bound to a
 * transaction already open: their `$transaction` runs `fn` inside it instead of opening another.
 * Several operations of different services then commit or roll back as one (config apply).
 */
export function joinedTransaction(tx: Db): PrismaClient {
  const joined: PrismaClient = new Proxy(tx, {
    get(target, prop) {
      if (prop === '$transaction') {
        return (work: unknown) => (typeof work === 'function' ? (work as (db: Db) => Promise<unknown>)(joined) : Promise.all(work as Promise<unknown>[]));
      }
      return Reflect.get(target, prop);
    },
  }) as unknown as PrismaClient;
  return joined;
}
