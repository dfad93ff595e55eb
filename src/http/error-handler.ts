import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { AppError } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { errorBody, statusTitle } from './errors.ts';
import { usesRequestErrorBody } from './error-format.ts';
import { sendJson } from './json-response.ts';

/** Errors body-parser raises, keyed by its `type`, with what the client should do. */
const BODY_PARSER_ERRORS: Record<string, [number, string]> = {
  'entity.parse.failed': [400, 'The request body is not valid JSON'],
  'entity.too.large': [413, 'The request body is larger than this server accepts'],
  'encoding.unsupported': [415, 'The request body uses an unsupported content encoding'],
  'charset.unsupported': [415, 'The request body uses an unsupported charset; send UTF-8'],
  'request.aborted': [400, 'The request was aborted before its body arrived'],
};

function send(res: Response, path: string, status: number, detail: string, metadata?: Record<string, unknown>) {
  if (res.headersSent) return;
  const body = usesRequestErrorBody(path)
    ? { title: statusTitle(status), detail, status, requestId: res.locals.requestId as string }
    : errorBody(status, detail, metadata);
  sendJson(res, status, body);
}

export const notFound: RequestHandler = (req, res) => {
  send(res, req.path, 404, `No route for ${req.method} ${req.path}; see /api/v0/openapi.json for the API`);
};

/** The one place errors become responses; unexpected ones are logged and never leak details. */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  const log = (res.locals.log as Logger | undefined) ?? undefined;
  if (err instanceof AppError) {
    for (const [name, value] of Object.entries(err.headers ?? {})) res.setHeader(name, value);
    send(res, req.path, err.status, err.message, err.metadata);
    return;
  }
  const known = typeof err?.type === 'string' ? BODY_PARSER_ERRORS[err.type] : undefined;
  if (known) {
    send(res, req.path, known[0], known[1]);
    return;
  }
  log?.error({ err }, 'unhandled error');
  send(res, req.path, 500, `Internal error; quote request id ${res.locals.requestId as string} when reporting it`);
};
