import type { RequestHandler } from 'express';
import type { Logger } from '../lib/logger.ts';

/** A child logger per request (bound to its id), and one line when the response is done. */
export function accessLog(log: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const reqLog = log.child({ requestId: res.locals.requestId });
    res.locals.log = reqLog;
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      reqLog.info({ method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 10) / 10 }, 'request');
    });
    next();
  };
}
