import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.ts';
import { appWithoutDatabase } from '../support/route-table.ts';

/** The API behaviours a newcomer's first day met (issue #34), on one server. */
describe('a first day over HTTP', () => {
  let api: TestApi;
  beforeAll(async () => {
    // Behind a proxy on loopback, as the test's own requests come: its X-Forwarded-* headers count.
    api = await startTestApi('pglite', { env: { AGENTPLANE_TRUST_PROXY: 'loopback' } });
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

  it('hands out absolute upload URLs on the address the caller used, forwarded by a trusted proxy included', async () => {
    const as = api.acme.members.owner.apiKey;
    const run = await api.call('POST', '/api/v0/wiki', {
      as,
      body: {
        repoUrl: 'https://git.example.com/acme/widgets.git',
        commitHash: 'b'.repeat(40),
        branch: 'main',
        hasLocalChanges: false,
        agentVersion: 'cli 1.4.0',
        pages: [{ path: 'overview', title: 'Overview', markdown: '# Widgets\n' }],
      },
    });
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    const ask = (headers: Record<string, string>) =>
      fetch(`${api.url}/api/v0/wiki/video-upload-url`, {
        method: 'POST',
        headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ wikiRunId: run.body.wikiRunId, contentType: 'video/mp4', sizeBytes: 1024 }),
      }).then(async (r) => ((await r.json()) as { uploadUrl: string }).uploadUrl);
    expect(await ask({})).toMatch(new RegExp(`^${api.url}/api/v0/wiki/${run.body.wikiRunId}/video\\?`));
    expect(await ask({ 'x-forwarded-proto': 'https', 'x-forwarded-host': 'agents.example.com' })).toMatch(
      new RegExp(`^https://agents\\.example\\.com/api/v0/wiki/${run.body.wikiRunId}/video\\?`),
    );
  });
});
