import type { Request, RequestHandler } from 'express';
import { metricsOn, recordHttpRequest } from './metrics.ts';
import { startRequestSpan } from './tracing.ts';

/** What no API route took (the console's files, unknown paths): one label, so paths never become series. */
const UNMATCHED = 'unmatched';

/** The route template a request matched (`/api/v0/computers/:computerId`), never its path. */
function routeOf(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? req.baseUrl + path : UNMATCHED;
}

/**
 * Each request's metrics and server span: counted and timed by method, route template and status
 * when the response finishes; the span's parent is the request's W3C `traceparent`, and the
 * request's work (and the jobs it sends) runs inside it. While both are off it costs a timestamp and
 * adds no listener.
 */
export function observeRequests(): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const span = startRequestSpan(req.method, req.get('traceparent'), next);
    if (!span && !metricsOn()) return;
    res.on('finish', () => {
      const route = routeOf(req);
      recordHttpRequest(req.method, route, res.statusCode, (performance.now() - started) / 1000);
      span?.end(route, res.statusCode);
    });
  };
}
