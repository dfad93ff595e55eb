import type { RequestHandler } from 'express';
import type { Logger } from '../lib/logger.ts';

/**
 * API calls are what an operator reads the log for; the console's files (dozens a page load) and
 * the health probes (a few a minute) are logged at debug.
 */
const apiRequest = (path: string) => path.startsWith('/api/');

/** A child logger per request (bound to its id), and one line when the response is done. */
export function accessLog(log: Logger): RequestHandler {
  // The access line's fields are fixed and hold no secret (the path comes without its query), so
  // it skips redaction: the wildcard paths cost about 3 µs a line, on every request.
  const lines = log.child({}, { redact: [] });
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const requestId = res.locals.requestId as string;
    res.locals.log = log.child({ requestId });
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const line = { requestId, method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 10) / 10 };
      if (apiRequest(req.path)) lines.info(line, 'request');
      else lines.debug(line, 'request');
    });
    next();
  };
}
