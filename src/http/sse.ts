import type { Request, Response } from 'express';
import { countSseClient } from '../observability/metrics.ts';

/** One server-sent event: `id` only for events a client may resume after (Last-Event-ID). */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** A response streaming server-sent events, as routes see it (no Express in services). */
export interface EventSink {
  /** Queues an event; false when the client fell too far behind and was dropped. */
  send(event: SseEvent): boolean;
  /** A comment line: keeps proxies from closing an idle stream. */
  comment(text: string): boolean;
  readonly closed: boolean;
  /** Runs once, when the client goes away or the stream is closed. */
  onClose(fn: () => void): void;
  close(): void;
}

export interface SinkOptions {
  /** Bytes queued for a client (unsent, in the socket's buffers) past which it is dropped. */
  maxBufferedBytes: number;
  /** The reconnection delay clients are told (`retry:`). */
  retryMs: number;
}

/**
 * Opens a `text/event-stream` response. A client that stops reading is dropped once
 * `maxBufferedBytes` wait for it, rather than buffering without bound; it reconnects with
 * Last-Event-ID and loses nothing stored.
 */
export function openEventSink(req: Request, res: Response, opts: SinkOptions): EventSink {
  const closers: (() => void)[] = [];
  let closed = false;
  const finish = () => {
    if (closed) return;
    closed = true;
    for (const fn of closers.splice(0)) fn();
  };
  res.status(200);
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  // no-transform: proxies must not compress or buffer the stream; X-Accel-Buffering: nginx.
  res.setHeader('cache-control', 'no-cache, no-transform');
  res.setHeader('x-accel-buffering', 'no');
  res.flushHeaders();
  req.socket.setNoDelay(true);
  // An open stream has no request timeout; heartbeats keep it alive.
  req.socket.setTimeout(0);
  res.on('close', finish);
  countSseClient(1);
  closers.push(() => countSseClient(-1));

  const write = (text: string): boolean => {
    if (closed) return false;
    if (res.writableLength > opts.maxBufferedBytes) {
      res.destroy();
      finish();
      return false;
    }
    res.write(text);
    return true;
  };
  write(`retry: ${opts.retryMs}\n\n`);
  return {
    send: (e) => write(`${e.id === undefined ? '' : `id: ${e.id}\n`}event: ${e.event}\ndata: ${e.data}\n\n`),
    comment: (text) => write(`: ${text}\n\n`),
    get closed() {
      return closed;
    },
    onClose(fn) {
      if (closed) fn();
      else closers.push(fn);
    },
    close() {
      if (!closed) res.end();
      finish();
    },
  };
}
