import { AsyncLocalStorage } from 'node:async_hooks';
import type { RequestHandler } from 'express';

const origins = new AsyncLocalStorage<string | undefined>();

/**
 * Remembers, for the rest of the request, the origin it was sent to (`https://host:port`): its Host
 * header, or X-Forwarded-Proto and X-Forwarded-Host where Express's `trust proxy` trusts the
 * sender. URLs an answer hands out (the relay's, signed uploads) are then the address the caller
 * used, a load balancer's rather than the replica's.
 */
export const rememberRequestOrigin: RequestHandler = (req, _res, next) => {
  const host = req.host;
  origins.run(host ? `${req.protocol}://${host}` : undefined, next);
};

/** The origin of the request being answered, if code runs on behalf of one. */
export const requestOrigin = (): string | undefined => origins.getStore();
