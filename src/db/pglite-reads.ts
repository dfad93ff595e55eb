import { parse, protocol, type PGlite } from '@electric-sql/pglite';
import type { ReadRows, Statement } from './reads.ts';

/** The locks PGlite's own `query` takes; declared on PGlite's public class, but underscored. */
interface PgliteLocks {
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T>;
}

/** SQLSTATE of "prepared statement ... does not exist". */
const INVALID_STATEMENT_NAME = '26000';

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * Prepared statements on PGlite. Its `query` parses, plans and describes every statement in six
 * protocol round trips through WebAssembly (about 0.4 ms for the credential lookup); a prepared
 * statement is bound and executed in one (about 0.09 ms). PGlite is one session, so a statement
 * prepared once stays prepared.
 *
 * Both of PGlite's locks are held, as its `query` holds them: a read waits for an open
 * transaction (a Prisma interactive one included) to end instead of running inside it.
 */
export function readsFromPglite(pglite: PGlite): ReadRows {
  const locks = pglite as unknown as PgliteLocks;
  const prepared = new Set<string>();
  const run = async (statement: Statement, params: string[]) => {
    const isNew = !prepared.has(statement.name);
    const messages = [
      // Closing first makes preparing safe when the name exists already: an earlier first call
      // parsed and then failed, or another reader on this PGlite prepared the same statement.
      ...(isNew
        ? [protocol.serialize.close({ type: 'S', name: statement.name }), protocol.serialize.parse({ name: statement.name, text: statement.text })]
        : []),
      protocol.serialize.bind({ statement: statement.name, values: params }),
      protocol.serialize.describe({ type: 'P' }),
      protocol.serialize.execute({}),
      protocol.serialize.sync(),
    ];
    // On an error PGlite still runs Sync (the session stays usable) and then throws. A read has
    // nothing to sync to the file system, and skipping PGlite's sync (a lock around a no-op on
    // the node file system) saves about 5% of the read's CPU.
    const result = await pglite.execProtocol(concat(messages), { throwOnError: true, syncToFs: false });
    if (isNew) prepared.add(statement.name);
    return parse.parseResults(result.messages, pglite.parsers)[0]!.rows;
  };
  return <T>(statement: Statement, params: string[]) =>
    locks._runExclusiveTransaction(() =>
      locks._runExclusiveQuery(async () => {
        try {
          return (await run(statement, params)) as T[];
        } catch (err) {
          // Someone ran DEALLOCATE (or DISCARD ALL) on the shared session: prepare it again.
          if ((err as { code?: string }).code !== INVALID_STATEMENT_NAME || !prepared.delete(statement.name)) throw err;
          return (await run(statement, params)) as T[];
        }
      }),
    );
}
