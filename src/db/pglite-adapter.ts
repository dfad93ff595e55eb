import type { PGlite, Transaction } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';

/** The parts of pglite-prisma-adapter's (0.7.2) adapter this changes; its classes are not exported. */
interface PgliteAdapter {
  startTransactionInner(conn: PGlite, options: unknown): Promise<PgliteTransaction>;
  onError(error: unknown): never;
}
interface PgliteTransaction {
  commit(): Promise<void>;
}

/**
 * Prisma's adapter for PGlite, except that a transaction whose COMMIT fails says so. The
 * adapter (0.7.2) runs each interactive transaction inside PGlite's `transaction()`, and once
 * the transaction has begun it catches that call's rejection and drops it: a COMMIT that
 * PostgreSQL refuses (a deferred constraint or trigger raising, such as the turn admission at
 * commit) rolled the work back while Prisma reported success. Here `commit()` awaits PGlite's
 * own outcome and throws its error as the adapter throws any other (a DriverAdapterError with
 * the SQLSTATE), as on PostgreSQL.
 */
export function pgliteAdapter(pglite: PGlite): PrismaPGlite {
  const factory = new PrismaPGlite(pglite);
  const connect = factory.connect.bind(factory);
  factory.connect = async () => {
    const adapter = (await connect()) as unknown as PgliteAdapter;
    const startInner = adapter.startTransactionInner.bind(adapter);
    adapter.startTransactionInner = async (conn, options) => {
      let outcome: Promise<unknown> = Promise.resolve();
      const watched = {
        transaction: (fn: (tx: Transaction) => Promise<unknown>) => (outcome = conn.transaction(fn)),
      } as unknown as PGlite;
      const tx = await startInner(watched, options);
      const commit = tx.commit.bind(tx);
      tx.commit = async () => {
        await commit();
        await outcome.catch((err: unknown) => adapter.onError(err));
      };
      return tx;
    };
    return adapter as unknown as Awaited<ReturnType<typeof connect>>;
  };
  return factory;
}
