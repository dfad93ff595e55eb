import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';

describe.each(BACKENDS)('computer templates on %s', (backend) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi(backend);
  });
  afterAll(() => api?.close());

  const body = { name: 'node service', provider: 'local', repos: ['https://git.example.test/acme/app.git'], autoInstallDeps: true, setupScript: 'echo hi' };

  it('managers and owners write templates, every member reads them, other organizations never see them', async () => {
    const manager = api.acme.members.manager.apiKey;
    const created = await api.call('POST', '/api/v0/computer-templates', { as: manager, body });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ ...body, id: expect.stringMatching(/^tpl_/) });
    const id = created.body.id;

    for (const role of ['user', 'guest'] as const) {
      const refused = await api.call('POST', '/api/v0/computer-templates', { as: api.acme.members[role].apiKey, body: { name: 'x' } });
      expect(refused.status).toBe(403);
      expect((await api.call('PATCH', `/api/v0/computer-templates/${id}`, { as: api.acme.members[role].apiKey, body: { name: 'y' } })).status).toBe(403);
    }
    const listed = await api.call('GET', '/api/v0/computer-templates', { as: api.acme.members.user.apiKey });
    expect(listed.body.templates.map((t: { id: string }) => t.id)).toEqual([id]);
    expect((await api.call('GET', `/api/v0/computer-templates/${id}`, { as: api.acme.members.guest.apiKey })).body.name).toBe('node service');
    expect((await api.call('GET', `/api/v0/computer-templates/${id}`, { as: api.globex.members.owner.apiKey })).status).toBe(404);
    expect((await api.call('GET', '/api/v0/computer-templates', { as: api.globex.members.owner.apiKey })).body.templates).toEqual([]);
    // Nor change or delete them: 404, and the template stays as it was.
    const outsider = api.globex.members.owner.apiKey;
    expect((await api.call('PATCH', `/api/v0/computer-templates/${id}`, { as: outsider, body: { name: 'taken over' } })).status).toBe(404);
    expect((await api.call('DELETE', `/api/v0/computer-templates/${id}`, { as: outsider })).status).toBe(404);
    expect((await api.call('GET', `/api/v0/computer-templates/${id}`, { as: manager })).body.name).toBe('node service');

    const duplicate = await api.call('POST', '/api/v0/computer-templates', { as: manager, body: { name: 'node service' } });
    expect(duplicate.status).toBe(409);

    const patched = await api.call('PATCH', `/api/v0/computer-templates/${id}`, { as: manager, body: { setupScript: null, repos: [] } });
    expect(patched.status).toBe(200);
    expect(patched.body.setupScript).toBeUndefined();
    expect(patched.body.repos).toEqual([]);
    expect(patched.body.updatedAt).toBeGreaterThanOrEqual(created.body.updatedAt);

    expect((await api.call('DELETE', `/api/v0/computer-templates/${id}`, { as: manager })).status).toBe(204);
    expect((await api.call('GET', `/api/v0/computer-templates/${id}`, { as: manager })).status).toBe(404);
    // The name is free again once the template is deleted.
    expect((await api.call('POST', '/api/v0/computer-templates', { as: manager, body: { name: 'node service' } })).status).toBe(201);
  });

  it('validates the body: name 1-100, repository URLs, setupScript up to 10000 characters', async () => {
    const as = api.acme.members.owner.apiKey;
    for (const bad of [
      { name: '' },
      { name: 'x'.repeat(101) },
      { name: 'r', repos: ['not a url'] },
      { name: 's', setupScript: 'x'.repeat(10_001) },
      { name: 'u', other: 1 },
    ]) {
      expect((await api.call('POST', '/api/v0/computer-templates', { as, body: bad })).status, JSON.stringify(bad).slice(0, 80)).toBe(400);
    }
  });

  it('a computer made from an unknown or deleted template is 400', async () => {
    const as = api.acme.members.owner.apiKey;
    const t = await api.call('POST', '/api/v0/computer-templates', { as, body: { name: 'short-lived' } });
    await api.call('DELETE', `/api/v0/computer-templates/${t.body.id}`, { as });
    for (const templateId of ['tpl_nope', t.body.id]) {
      const res = await api.call('POST', '/api/v0/computers', { as, body: { name: 'c', source: { kind: 'template', templateId, isListed: true } } });
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain(templateId);
    }
  });
});
