import type { WebSocket } from 'ws';

/** Bytes handed to one side and not yet written out, above which the other side stops reading. */
const UNWRITTEN_LIMIT = 256 * 1024;

/**
 * Carries every message of each WebSocket to the other as it comes, both ways: the relay joining
 * a person's connection to the agent's when both arrive as WebSockets. Each message is sent on
 * whole, as received, without two byte streams piped together in between (webSocketDuplex: a
 * stream, a pipe and coalesceWrites for each message, for nothing). A side the other cannot write
 * out as fast is paused until it has caught up.
 *
 * Messages that came before the call are lost, so a side that waited to be joined must have been
 * held since it opened (holdWebSocket); this resumes both. Closing is the caller's: see
 * spliceWebSockets for the usual way.
 */
export function passMessages(a: WebSocket, b: WebSocket): void {
  forward(a, b);
  forward(b, a);
  a.resume();
  b.resume();
}

/**
 * Holds a WebSocket that waits to be joined (passMessages): paused, so nothing it receives is
 * emitted and lost meanwhile, and with its errors taken (its close tells the rest). Call it where
 * the WebSocket opens, before anything can arrive on it.
 */
export function holdWebSocket(ws: WebSocket): WebSocket {
  ws.pause();
  ws.on('error', () => {});
  return ws;
}

/** passMessages, and either side's close closes the other: they carry one SSH connection, of no use half open. */
export function spliceWebSockets(a: WebSocket, b: WebSocket): void {
  passMessages(a, b);
  a.once('close', () => b.terminate());
  b.once('close', () => a.terminate());
}

function forward(from: WebSocket, to: WebSocket): void {
  let unwritten = 0;
  // A failed WebSocket closes: its close is what ends the session.
  from.on('error', () => {});
  from.on('message', (data: Buffer, isBinary: boolean) => {
    unwritten += data.length;
    // Called once written out, or with an error once `to` has closed (its close ends the session).
    to.send(data, { binary: isBinary }, () => {
      unwritten -= data.length;
      if (from.isPaused && unwritten < UNWRITTEN_LIMIT) from.resume();
    });
    if (unwritten >= UNWRITTEN_LIMIT) from.pause();
  });
}
