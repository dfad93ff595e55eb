import net from 'node:net';
import pg from 'pg';
import type { ReadRows, Statement } from './reads.ts';

/** One connection of the hot reads: its socket, and the client once connected. */
interface Slot {
  socket: net.Socket;
  connected: Promise<pg.Client>;
}

/**
 * Prepared statements on a few node-postgres connections of their own in pipeline mode
 * (https://node-postgres.com/features/pipelining): a read is written at once instead of waiting
 * for a free pooled connection and the answer before it. Under load the server then takes many
 * reads from one socket read and answers them in a row, and neither side sleeps and wakes per
 * read. Measured with bench/http.ts (50 connections, PostgreSQL on the same two cores), CPU per
 * authenticated request: 138 µs in the server and 75 µs in PostgreSQL from a pool of ten
 * connections, one read at a time each; 91 µs and 31 µs pipelined.
 *
 * The reads issued in one turn of the event loop leave in one socket write (the socket is corked
 * until the turn ends), which took another 10-20% off both sides' CPU per read.
 *
 * Each read is its own extended-protocol exchange ending in Sync, so a failing read fails alone.
 * Connections open on first use; one that breaks fails the reads in flight on it and is replaced
 * on the next read.
 */
export function pipelinedReads(config: pg.ClientConfig, connections: number): { reads: ReadRows; close(): Promise<void> } {
  const slots: (Slot | undefined)[] = Array.from({ length: connections });
  const held = new Set<net.Socket>();
  let next = 0;
  let closed = false;

  function open(index: number): Slot {
    // The socket is made here, as pg's `stream` option allows, so its writes can be held.
    const socket = new net.Socket();
    const client = new pg.Client({ ...config, pipeline: true, stream: () => socket });
    const slot = { socket, connected: client.connect().then(() => client) };
    const drop = () => {
      if (slots[index] === slot) slots[index] = undefined;
    };
    // Without a listener an error event would end the process; the reads in flight reject anyway.
    client.on('error', drop);
    client.on('end', drop);
    slot.connected.catch(drop);
    slots[index] = slot;
    return slot;
  }

  function holdWritesUntilTurnEnds(socket: net.Socket) {
    if (held.has(socket)) return;
    held.add(socket);
    socket.cork();
    setImmediate(() => {
      held.delete(socket);
      socket.uncork();
    });
  }

  const reads = async <T>(statement: Statement, params: string[]): Promise<T[]> => {
    if (closed) throw new Error('The database connection is closed');
    const index = next;
    next = (next + 1) % connections;
    const slot = slots[index] ?? open(index);
    const client = await slot.connected;
    holdWritesUntilTurnEnds(slot.socket);
    const result = await client.query({ name: statement.name, text: statement.text, values: params });
    return result.rows as T[];
  };

  return {
    reads,
    close: async () => {
      closed = true;
      const opened = slots.filter((slot) => slot !== undefined);
      slots.fill(undefined);
      await Promise.all(opened.map((slot) => slot.connected.then((client) => client.end(), () => undefined)));
    },
  };
}
