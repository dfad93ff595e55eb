import type { PGlite } from '@electric-sql/pglite';
import type pg from 'pg';

/**
 * The narrow SQL surface that code below Prisma needs (migrations, bootstrap checks):
 * one connection, parameterised queries, and multi-statement scripts.
 */
export interface SqlConnection {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
  /** Runs a script of several statements (no parameters). */
  exec(sql: string): Promise<void>;
}

export function fromPglite(db: PGlite): SqlConnection {
  return {
    query: async (sql, params) => {
      const result = await db.query(sql, params);
      return { rows: result.rows as never[] };
    },
    exec: async (sql) => {
      await db.exec(sql);
    },
  };
}

export function fromPgClient(client: pg.Client | pg.PoolClient): SqlConnection {
  return {
    query: async (sql, params) => {
      const result = await client.query(sql, params as unknown[]);
      return { rows: result.rows };
    },
    exec: async (sql) => {
      await client.query(sql);
    },
  };
}
