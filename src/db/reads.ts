/**
 * A read that runs on (nearly) every request, such as the credential lookup. Its name lets each
 * connection parse and plan it once and then only bind and execute it.
 */
export interface Statement {
  /** Unique per text; prefixed `agentplane_` so it never meets another library's statements. */
  name: string;
  text: string;
}

/**
 * Runs a hot read and returns its rows, timestamps as Dates, json as values, arrays as arrays.
 * Parameters are text; the statement casts them where it needs another type.
 *
 * The opened database (`Database.reads`) runs them as prepared statements on its own driver:
 * `readsFromPglite` (src/db/pglite-reads.ts) or `pipelinedReads` (src/db/pg-reads.ts). Prisma's
 * raw queries would parse and plan every call and add Prisma's own work: measured for the
 * credential lookup, CPU per call 0.21 ms on PostgreSQL and 0.83 ms on PGlite, against 0.05 ms
 * and 0.15 ms prepared on the driver.
 */
export type ReadRows = <T>(statement: Statement, params: string[]) => Promise<T[]>;
