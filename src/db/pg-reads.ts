import net from 'node:net';
import pg from 'pg';
import type { ReadRows, Statement } from './reads.ts';

/** The connection of the hot reads: its socket, and the client once connected. */
interface Connection {
  socket: net.Socket;
  connected: Promise<pg.Client>;
}

/**
 * Prepared statements on one node-postgres connection of their own in pipeline mode
 * (https://node-postgres.com/features/pipelining): a read is written at once instead of waiting
 * for a free pooled connection and the answer before it, and the reads issued in one turn of the
 * event loop leave in one socket write (the socket is corked until the turn ends). Under load
 * PostgreSQL then takes many reads from one socket read and answers them in a row, and neither
 * side sleeps and wakes per read. Measured with bench/http.ts (50 connections, PostgreSQL on the
 * same two cores), CPU per `GET /api/v0/service-accounts` in the server + in PostgreSQL, runs
 * alternated: 266 + 206 µs reading from a pool of ten connections, one read at a time each;
 * 162 + 93 µs pipelined on one connection. One connection batches best: in another alternated
 * set, 100 + 73 µs (8,700 requests/s) on one, 103 + 79 µs on two, 145 + 115 µs on four.
 *
 * The reads are answered in order, so a slow one holds up those behind it: keep them small.
 * Each is its own extended-protocol exchange ending in Sync, so a failing read fails alone. The
 * connection opens on first use; one that breaks fails the reads in flight on it and is replaced
 * on the next read.
 */
export function pipelinedReads(config: pg.ClientConfig): { reads: ReadRows; close(): Promise<void> } {
  let current: Connection | undefined;
  let held = false;
  let closed = false;

  function open(): Connection {
    // The socket is made here, as pg's `stream` option allows, so its writes can be held.
    const socket = new net.Socket();
    const client = new pg.Client({ ...config, pipeline: true, stream: () => socket });
    const connection = { socket, connected: client.connect().then(() => client) };
    const drop = () => {
      if (current === connection) current = undefined;
    };
    // Without a listener an error event would end the process; the reads in flight reject anyway.
    client.on('error', drop);
    client.on('end', drop);
    connection.connected.catch(drop);
    current = connection;
    return connection;
  }

  function holdWritesUntilTurnEnds(socket: net.Socket) {
    if (held) return;
    held = true;
    socket.cork();
    setImmediate(() => {
      held = false;
      socket.uncork();
    });
  }

  const reads = async <T>(statement: Statement, params: string[]): Promise<T[]> => {
    if (closed) throw new Error('The database connection is closed');
    const connection = current ?? open();
    const client = await connection.connected;
    holdWritesUntilTurnEnds(connection.socket);
    const result = await client.query({ name: statement.name, text: statement.text, values: params });
    return result.rows as T[];
  };

  return {
    reads,
    close: async () => {
      closed = true;
      const last = current;
      current = undefined;
      await last?.connected.then(
        (client) => client.end(),
        () => undefined,
      );
    },
  };
}
