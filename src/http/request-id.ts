import type { RequestHandler } from 'express';
import { randomToken } from '../lib/ids.ts';

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries `x-request-id`: the client's when it is sane, otherwise a new one. */
export const requestId: RequestHandler = (req, res, next) => {
  const given = req.get('x-request-id');
  const id = given && SANE_ID.test(given) ? given : `req_${randomToken(24)}`;
  res.locals.requestId = id;
  res.setHeader('x-request-id', id);
  next();
};
