import type { Duplex } from 'node:stream';
import { createWebSocketStream, type WebSocket } from 'ws';
import { coalesceWrites } from '../coalesce-writes.ts';

/**
 * A WebSocket as the byte stream ssh2 reads and writes, behaving like a TCP socket at its ends:
 * when the WebSocket closes the stream is destroyed (ws only ends its readable side, and ssh2
 * waits for a close), and destroying the stream drops the connection at once (a stalled peer
 * would keep a closing handshake waiting). Writes made in one tick go out as one message (see
 * coalesceWrites: ssh2 writes each packet in pieces). A held WebSocket (holdWebSocket) is resumed:
 * the stream keeps what arrives until it is read, and a stream only written to still answers the
 * close handshake.
 */
export function webSocketDuplex(ws: WebSocket): Duplex {
  const stream = coalesceWrites(createWebSocketStream(ws));
  ws.resume();
  stream.on('error', () => {});
  ws.once('close', () => stream.destroy());
  stream.once('close', () => ws.terminate());
  return stream;
}
