import type { Duplex } from 'node:stream';
import { createWebSocketStream, type WebSocket } from 'ws';

/**
 * A WebSocket as the byte stream ssh2 reads and writes, behaving like a TCP socket at its ends:
 * when the WebSocket closes the stream is destroyed (ws only ends its readable side, and ssh2
 * waits for a close), and destroying the stream drops the connection at once (a stalled peer
 * would keep a closing handshake waiting).
 */
export function webSocketDuplex(ws: WebSocket): Duplex {
  const stream = createWebSocketStream(ws);
  stream.on('error', () => {});
  ws.once('close', () => stream.destroy());
  stream.once('close', () => ws.terminate());
  return stream;
}
