import pg from 'pg';
import type { ReadRows, Statement } from './reads.ts';

/**
 * Prepared statements on a few node-postgres connections of their own in pipeline mode
 * (https://node-postgres.com/features/pipelining): a read is written at once instead of waiting
 * for a free pooled connection and the answer before it. Under load the server then takes many
 * reads from one socket read and answers them in a row, and neither side sleeps and wakes per
 * read. Measured with bench/http.ts (50 connections, PostgreSQL on the same two cores), CPU per
 * authenticated request: 138 µs in the server and 75 µs in PostgreSQL from a pool of ten
 * connections, one read at a time each; 91 µs and 31 µs pipelined.
 *
 * Each read is its own extended-protocol exchange ending in Sync, so a failing read fails alone.
 * Connections open on first use; one that breaks fails the reads in flight on it and is replaced
 * on the next read.
 */
export function pipelinedReads(config: pg.ClientConfig, connections: number): { reads: ReadRows; close(): Promise<void> } {
  const slots: (Promise<pg.Client> | undefined)[] = Array.from({ length: connections });
  let next = 0;
  let closed = false;

  function open(index: number): Promise<pg.Client> {
    const client = new pg.Client({ ...config, pipeline: true });
    const connected = client.connect().then(() => client);
    const drop = () => {
      if (slots[index] === connected) slots[index] = undefined;
    };
    // Without a listener an error event would end the process; the reads in flight reject anyway.
    client.on('error', drop);
    client.on('end', drop);
    connected.catch(drop);
    slots[index] = connected;
    return connected;
  }

  const reads = async <T>(statement: Statement, params: string[]): Promise<T[]> => {
    if (closed) throw new Error('The database connection is closed');
    const index = next;
    next = (next + 1) % connections;
    const client = await (slots[index] ?? open(index));
    const result = await client.query({ name: statement.name, text: statement.text, values: params });
    return result.rows as T[];
  };

  return {
    reads,
    close: async () => {
      closed = true;
      const opened = slots.filter((slot) => slot !== undefined);
      slots.fill(undefined);
      await Promise.all(opened.map((slot) => slot.then((client) => client.end(), () => undefined)));
    },
  };
}
