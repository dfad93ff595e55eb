import type { Duplex } from 'node:stream';

type WriteCallback = (err?: Error | null) => void;

const coalescing = new WeakSet<Duplex>();

/**
 * Makes the writes one synchronous run of code makes to `stream` go out as one write, in the same
 * tick. ssh2 writes each SSH packet to its transport in three or four pieces (length, body, MAC)
 * and never corks it; on a transport that frames every write (a WebSocket message, an SSH
 * channel's data packet, a TCP segment without Nagle) each piece became its own frame, so the
 * relay's nested SSH connections multiplied a 32 KB packet into a dozen frames, each encrypted,
 * framed and written on its own. Hand ssh2 the stream this returns as its `sock`.
 *
 * Data is never held past the current tick (no added latency), order is kept, `end()` sends what
 * is pending first, and `write()` answers as the stream would (false while it needs a drain).
 * Wrapping a stream twice changes nothing.
 */
export function coalesceWrites<T extends Duplex>(stream: T): T {
  if (coalescing.has(stream)) return stream;
  coalescing.add(stream);
  const write = stream.write.bind(stream) as (chunk: Uint8Array, cb?: WriteCallback) => boolean;
  const end = stream.end.bind(stream) as (...args: unknown[]) => T;
  let pending: Uint8Array[] = [];
  let callbacks: WriteCallback[] = [];

  const flush = (): void => {
    if (pending.length === 0) return;
    const chunks = pending;
    const waiting = callbacks;
    pending = [];
    callbacks = [];
    const done = waiting.length ? (err?: Error | null) => waiting.forEach((cb) => cb(err)) : undefined;
    if (stream.destroyed || stream.writableEnded) {
      done?.(new Error('write after the stream ended'));
      return;
    }
    write(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), done);
  };

  const coalesced = (chunk: unknown, encoding?: BufferEncoding | WriteCallback, cb?: WriteCallback): boolean => {
    const callback = typeof encoding === 'function' ? encoding : cb;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8') : (chunk as Uint8Array);
    if (pending.length === 0) process.nextTick(flush);
    pending.push(bytes);
    if (callback) callbacks.push(callback);
    return !stream.writableNeedDrain;
  };
  const ending = (...args: unknown[]): T => {
    flush();
    return end(...args);
  };
  return Object.assign(stream, { write: coalesced, end: ending });
}
