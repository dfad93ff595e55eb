import type { Readable, Writable } from 'node:stream';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import type { Authenticate } from '../auth/authenticate.ts';
import type { Guard } from '../auth/guards.ts';
import type { Principal } from '../auth/principal.ts';
import { requestFence, type AuthEpoch } from '../db/auth-epoch.ts';
import { BadRequest, UnsupportedMediaType } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { sendJson, sendJsonText } from './json-response.ts';
import { openEventSink, type EventSink, type SinkOptions } from './sse.ts';
import { SerializedJson } from './serialized-json.ts';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** `optional`: a credential is checked when one is sent, and the handler decides what anonymous callers get. */
export type RouteAuth = boolean | 'optional';

interface RouteContext<P, Q, B, A extends RouteAuth> {
  params: P;
  query: Q;
  body: B;
  principal: A extends true ? Principal : A extends 'optional' ? Principal | undefined : undefined;
  /** The request body as a stream, for routes without a JSON body (uploads). */
  bodyStream: Readable;
  /** The body's bytes as sent, for a route declaring `rawBody` (a signed webhook's payload). */
  rawBody: Buffer;
  /** The auth epoch as of a moment after this request arrived, read at most once: the fence of the fenced caches it reads (src/db/fenced-cache.ts). */
  fence: AuthEpoch;
  requestId: string;
  log: Logger;
  /** A request header (e.g. Last-Event-ID), or undefined. */
  header(name: string): string | undefined;
  /**
   * Whether the request's credential and guards would still let it in now (a fresh credential
   * read): long-lived streams ask it from time to time and end when it is revoked.
   */
  stillAuthorized(): Promise<boolean>;
}

interface RouteResult {
  status: number;
  /** A value, checked against the status's schema before it is sent, or JSON text built to satisfy it. */
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * A server-sent event stream instead of a body (a status declared with `eventStream`): called
   * with the open stream once the headers are sent; it owns the response until it closes it.
   */
  eventStream?: (sink: EventSink) => void;
  /** A body written as a stream (e.g. a zip) for a status declared without a schema. */
  stream?: (out: Writable) => Promise<void>;
}

/**
 * One route: the same zod schemas validate the request, type the handler, check the response and
 * produce the OpenAPI document. `path` is written the OpenAPI way (`/computers/{computerId}`).
 */
export interface RouteSpec<P = unknown, Q = unknown, B = unknown, A extends RouteAuth = RouteAuth> {
  method: Method;
  path: string;
  operationId: string;
  summary: string;
  tags: string[];
  /** false for public routes; true (the default) requires a credential; `optional` checks one when sent. */
  auth?: A;
  /**
   * For `optional` routes: the query parameter an anonymous caller must send instead of a credential
   * (a public link's token), and the 401 when it is missing, answered before anything is validated.
   */
  anonymousCredential?: { query: string; missing: () => Error };
  guards?: Guard[];
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /** Success responses: status -> schema (undefined for an empty body). */
  responses: Record<number, { description: string; schema?: z.ZodType; eventStream?: boolean }>;
  /** Error statuses this route documents. */
  errors: number[];
  /** The largest JSON body this route accepts, when it is not the server's (`AGENTPLANE_BODY_LIMIT`), e.g. `20mb` for uploaded wikis. */
  bodyLimit?: string;
  /** Read the body as bytes, whatever its type (`rawBody`), instead of as JSON: a signature covers the bytes. */
  rawBody?: boolean;
  handler(ctx: RouteContext<P, Q, B, A>): Promise<RouteResult>;
}

export function defineRoute<P = unknown, Q = unknown, B = unknown, A extends RouteAuth = true>(spec: RouteSpec<P, Q, B, A>): RouteSpec {
  return spec as unknown as RouteSpec;
}

/** `/a/{id}` -> `/a/:id` */
export function expressPath(openApiPath: string): string {
  return openApiPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}

function parsePart<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const errors = result.error.issues.map((i) => ({ field: i.path.join('.') || where, message: i.message }));
  const summary = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  throw new BadRequest(`Invalid request ${where}: ${summary}`, { metadata: { errors } });
}

/** Whether the request carries a body at all (a bodiless POST may stand for `{}`). */
const hasBody = (req: Request) => req.get('transfer-encoding') !== undefined || Number(req.get('content-length') ?? 0) > 0;

/** The JSON body into `req.body`; a body of another type answers 415 saying what to send. */
async function readJsonBody(req: Request, res: Response, parseJson: RequestHandler): Promise<void> {
  if (hasBody(req) && !req.is('application/json')) {
    const sent = req.get('content-type');
    throw new UnsupportedMediaType(
      `The request body must be JSON sent with the header Content-Type: application/json (this request sent ${sent ? `Content-Type: ${sent}` : 'no Content-Type'})`,
    );
  }
  await readBody(req, res, parseJson);
}

/** Runs a body parser (express.json, express.raw) on the request. */
function readBody(req: Request, res: Response, parser: RequestHandler): Promise<void> {
  return new Promise<void>((resolve, reject) => parser(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
}

export function mountRoute(
  router: Router,
  route: RouteSpec,
  deps: {
    authenticate: Authenticate;
    authEpoch: AuthEpoch;
    eventStreams?: SinkOptions /** JSON bodies past it are refused with 413, unless the route sets its own. */;
    bodyLimit?: string;
  },
): void {
  const responseSchemas = route.responses;
  const limit = route.bodyLimit ?? deps.bodyLimit;
  const parseJson = express.json({ limit });
  const parseRaw = route.rawBody ? express.raw({ type: () => true, limit }) : undefined;
  // Who is calling is settled before anything the request carries is read or validated: a caller
  // without a credential learns that, not what its body or query got wrong.
  router[route.method](expressPath(route.path), async (req: Request, res: Response) => {
    const fence = requestFence(deps.authEpoch);
    const wantsCredential = route.auth === 'optional' ? req.get('authorization') !== undefined : route.auth !== false;
    const anonymous = route.auth === 'optional' && !wantsCredential ? route.anonymousCredential : undefined;
    if (anonymous && typeof req.query[anonymous.query] !== 'string') throw anonymous.missing();
    const principal = wantsCredential ? await deps.authenticate(req.get('authorization'), fence) : undefined;
    if (principal) for (const guard of route.guards ?? []) guard(principal);
    if (parseRaw) await readBody(req, res, parseRaw);
    else if (route.body) await readJsonBody(req, res, parseJson);
    const ctx = {
      params: parsePart(route.params, req.params, 'path'),
      query: parsePart(route.query, req.query, 'query'),
      body: parsePart(route.body, route.body ? req.body : undefined, 'body'),
      principal,
      bodyStream: req,
      rawBody: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
      fence,
      requestId: res.locals.requestId as string,
      log: res.locals.log as Logger,
      header: (name: string) => req.get(name),
      stillAuthorized: async () => {
        if (route.auth === false) return true;
        try {
          const again = await deps.authenticate(req.get('authorization'), requestFence(deps.authEpoch));
          for (const guard of route.guards ?? []) guard(again);
          return true;
        } catch {
          return false;
        }
      },
    };
    const result = await route.handler(ctx as RouteContext<unknown, unknown, unknown, RouteAuth>);
    const declared = responseSchemas[result.status];
    if (!declared) throw new Error(`${route.operationId} answered undeclared status ${result.status}`);
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
    if (declared.eventStream) {
      if (!result.eventStream || !deps.eventStreams) throw new Error(`${route.operationId} declares an event stream but opened none`);
      result.eventStream(openEventSink(req, res, deps.eventStreams));
      return;
    }
    if (result.stream) {
      res.status(result.status);
      await result.stream(res);
      return;
    }
    if (!declared.schema) {
      res.status(result.status).end();
      return;
    }
    if (result.body instanceof SerializedJson) {
      sendJsonText(res, result.status, result.body.text);
      return;
    }
    // Responses go through their schema too: a field the schema lacks never leaves the server.
    sendJson(res, result.status, declared.schema.parse(result.body));
  });
}
