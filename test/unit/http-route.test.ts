import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Authenticate } from '../../src/auth/authenticate.ts';
import { managerOrHigher } from '../../src/auth/guards.ts';
import { accessLog } from '../../src/http/access-log.ts';
import { errorHandler, notFound } from '../../src/http/error-handler.ts';
import { requestId } from '../../src/http/request-id.ts';
import { defineRoute, mountRoute } from '../../src/http/route.ts';
import { SerializedJson } from '../../src/http/serialized-json.ts';
import { Conflict, Unauthorized } from '../../src/lib/errors.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { listenOnFreePort } from '../support/http.ts';

const authenticate: Authenticate = async (header) => {
  if (header === 'Bearer manager') return { organizationId: 'org_1', role: 'manager', credential: 'api_key', kind: 'user', userId: 'u1', email: 'm@x.test' };
  if (header === 'Bearer guest') return { organizationId: 'org_1', role: 'guest', credential: 'api_key', kind: 'user', userId: 'u2', email: 'g@x.test' };
  throw new Unauthorized('no');
};

const Thing = z.object({ id: z.string(), name: z.string() });

const routes = [
  defineRoute({
    method: 'post',
    path: '/api/v0/things/{thingId}',
    operationId: 'createThing',
    summary: 'test',
    tags: ['Test'],
    guards: [managerOrHigher],
    params: z.object({ thingId: z.string().regex(/^t_/, 'must start with t_') }),
    body: z.strictObject({ name: z.string().min(1).max(5), size: z.number().int().optional() }),
    responses: { 201: { description: 'created', schema: Thing } },
    errors: [400, 401, 403, 409],
    handler: async ({ params, body }) => {
      if (body.name === 'dup') throw new Conflict('A thing with that name exists; pick another name');
      if (body.name === 'boom') throw new Error('database password is hunter2');
      // `secret` is not in the response schema, so it must never reach the client.
      return { status: 201, body: { id: params.thingId, name: body.name, secret: 's3cr3t' } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v0/things',
    operationId: 'listThings',
    summary: 'test',
    tags: ['Test'],
    responses: { 200: { description: 'listed', schema: z.array(Thing) } },
    errors: [401],
    handler: async () => ({
      status: 200,
      headers: { 'cache-control': 'no-store' },
      body: new SerializedJson<z.infer<typeof Thing>[]>('[{"id":"t_1","name":"café"}, {"id":"t_2","name":"ü"}]'),
    }),
  }),
];

let base: { url: string; close(): Promise<void> };
beforeAll(async () => {
  const app = express();
  app.use(requestId, accessLog(createLogger({ level: 'silent' })), express.json());
  const router = express.Router();
  for (const r of routes) mountRoute(router, r, { authenticate, authEpoch: () => Promise.reject(new Error('these routes read no fenced cache')) });
  app.use(router, notFound, errorHandler);
  base = await listenOnFreePort(app);
});
afterAll(() => base.close());

const post = (path: string, body: unknown, token = 'manager') =>
  fetch(`${base.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });

describe('route machinery', () => {
  it('validates and answers through the response schema, dropping undeclared fields', async () => {
    const res = await post('/api/v0/things/t_1', { name: 'ok' });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: 't_1', name: 'ok' });
  });

  it('sends a serialized body as it is, as JSON, with the declared status and headers', async () => {
    const res = await fetch(`${base.url}/api/v0/things`, { headers: { authorization: 'Bearer manager' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.text()).toBe('[{"id":"t_1","name":"café"}, {"id":"t_2","name":"ü"}]');
  });

  it('answers JSON with its media type, charset and length, errors too', async () => {
    const ok = await post('/api/v0/things/t_1', { name: 'héllo' });
    const okText = await ok.text();
    const dup = await post('/api/v0/things/t_1', { name: 'dup' });
    const dupText = await dup.text();
    for (const [res, text] of [
      [ok, okText],
      [dup, dupText],
    ] as const) {
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    }
    expect(JSON.parse(okText)).toEqual({ id: 't_1', name: 'héllo' });
    expect(dup.status).toBe(409);
  });

  it('names every invalid field in detail and metadata', async () => {
    const res = await post('/api/v0/things/t_1', { name: 'too-long', size: 1.5, extra: true });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { detail: string; metadata: { errors: { field: string }[] } };
    expect(body.detail).toMatch(/^Invalid request body: /);
    expect(body.detail).toContain('name');
    expect(body.detail).toContain('size');
    // The unknown key is reported against the body itself.
    expect(body.metadata.errors.map((e) => e.field).sort()).toEqual(['body', 'name', 'size']);
    const badParam = await post('/api/v0/things/x1', { name: 'ok' });
    expect(badParam.status).toBe(400);
    expect(((await badParam.json()) as { detail: string }).detail).toBe('Invalid request path: thingId: must start with t_');
  });

  it('rejects unknown body fields on strict schemas', async () => {
    const res = await post('/api/v0/things/t_1', { name: 'ok', extra: 1 });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toContain('extra');
  });

  it('turns typed service errors into the error body', async () => {
    const res = await post('/api/v0/things/t_1', { name: 'dup' });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ detail: 'A thing with that name exists; pick another name', status: 409, title: 'Conflict' });
  });

  it('enforces guards with 403', async () => {
    const res = await post('/api/v0/things/t_1', { name: 'ok' }, 'guest');
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ status: 403, title: 'Forbidden' });
  });

  it('hides unexpected failures behind a 500 that names the request id', async () => {
    const res = await post('/api/v0/things/t_1', { name: 'boom' });
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('at ');
    const body = JSON.parse(text) as { detail: string };
    expect(body.detail).toContain(res.headers.get('x-request-id')!);
  });

  it('accepts a sane client request id and replaces an unsafe one', async () => {
    const ok = await fetch(`${base.url}/nope`, { headers: { 'x-request-id': 'client-abc.123' } });
    expect(ok.headers.get('x-request-id')).toBe('client-abc.123');
    const unsafe = await fetch(`${base.url}/nope`, { headers: { 'x-request-id': 'bad id\twith spaces' } });
    expect(unsafe.headers.get('x-request-id')).toMatch(/^req_[0-9a-z]{24}$/);
  });
});
