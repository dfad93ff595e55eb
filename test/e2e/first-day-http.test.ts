import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.ts';
import { appWithoutDatabase } from '../support/route-table.ts';

/** The API behaviours a newcomer's first day met (issue #34), on one server. */
describe('a first day over HTTP', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('pglite');
  });
  afterAll(() => api?.close());

  it('answers 401 before validating anything, on every route that takes a credential', async () => {
    const { routes } = await appWithoutDatabase();
    const guarded = routes.filter((r) => r.auth !== false);
    expect(guarded.length).toBeGreaterThan(80);
    for (const route of guarded) {
      // Path parameters that fail their schema, an unknown query parameter and a body of the wrong type and shape.
      const path = route.path.replace(/\{[^}]+\}/g, '%20not-an-id') + '?unknown=1';
      const res = await fetch(api.url + path, {
        method: route.method.toUpperCase(),
        headers: { 'content-type': 'text/plain' },
        body: route.method === 'get' ? undefined : 'not json',
      });
      expect(res.status, `${route.method.toUpperCase()} ${route.path}: ${await res.clone().text()}`).toBe(401);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/credentials/i);
    }
  });

  it('answers 415 naming the header to a body sent without Content-Type: application/json, and creates nothing', async () => {
    const before = await api.db.prisma.computer.count();
    for (const contentType of ['application/x-www-form-urlencoded', undefined]) {
      const headers: Record<string, string> = { authorization: `Bearer ${api.acme.members.owner.apiKey}` };
      if (contentType) headers['content-type'] = contentType;
      const res = await fetch(`${api.url}/api/v0/computers`, {
        method: 'POST',
        headers,
        body: new TextEncoder().encode('{"name":"dev-1","provider":"local"}'),
      });
      expect(res.status).toBe(415);
      const body = (await res.json()) as { detail: string; title: string };
      expect(body.title).toBe('Unsupported Media Type');
      expect(body.detail).toContain('Content-Type: application/json');
      expect(body.detail).toContain(contentType ? `sent Content-Type: ${contentType}` : 'sent no Content-Type');
    }
    expect(await api.db.prisma.computer.count()).toBe(before);
    // A POST without a body is not refused for its type, and JSON with a charset is JSON.
    const interrupt = await api.call('POST', '/api/v0/sessions/ses_missing/interrupt', { as: api.acme.members.owner.apiKey });
    expect(interrupt.status).toBe(404);
    const charset = await fetch(`${api.url}/api/v0/organization/users/invite`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.acme.members.owner.apiKey}`, 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ email: 'charset@acme.test' }),
    });
    expect(charset.status).toBe(200);
  });
});
