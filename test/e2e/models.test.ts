import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelCatalog } from '../../src/agent/model-catalog.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { writeModelsFile } from '../support/models-file.ts';

const file = writeModelsFile([
  { id: 'alpha', provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: 'ALPHA_KEY' },
  { id: 'beta', provider: 'anthropic', baseUrl: 'http://127.0.0.1:9', apiKeyEnv: 'BETA_KEY', contextWindow: 64_000 },
]);
Object.assign(process.env, file.env);

describe('the model catalog without AGENTPLANE_DEFAULT_MODEL', () => {
  it('makes the first model of the models file the default, or the first the policy allows', () => {
    expect(modelCatalog({}, undefined).map((m) => [m.id, m.isDefault])).toEqual([
      ['alpha', true],
      ['beta', false],
    ]);
    expect(modelCatalog({ modelPolicy: { blockedModelIds: ['alpha'] } }, 'alpha')).toEqual([
      { id: 'beta', provider: 'anthropic', contextWindow: 64_000, isDefault: true },
    ]);
    expect(modelCatalog({ modelPolicy: { allowedModelIds: ['nothing-listed'] } }, undefined)).toEqual([]);
  });
});

/** `GET /api/v0/models` (#34): the models file and the organization's custom models, as its model policy allows. */
describe('GET /api/v0/models', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('pglite', { env: { ...ALLOW_LOOPBACK, AGENTPLANE_DEFAULT_MODEL: 'beta' } });
  });
  afterAll(async () => {
    await api?.close();
    file.dispose();
  });

  const models = async (as = api.acme.members.user.apiKey) => {
    const res = await api.call('GET', '/api/v0/models', { as });
    expect(res.status).toBe(200);
    return res.body.models;
  };
  const setControls = async (settings: unknown) => {
    const res = await api.call('PUT', '/api/v0/organization/enterprise-controls', { as: api.acme.members.owner.apiKey, body: { settings } });
    expect(res.status, res.body?.detail).toBe(200);
  };

  it('answers 401 without credentials', async () => {
    expect((await api.call('GET', '/api/v0/models')).status).toBe(401);
  });

  it("lists the models file with the deployment's default marked", async () => {
    expect(await models()).toEqual([
      { id: 'alpha', provider: 'openai-compatible', contextWindow: 128_000, isDefault: false },
      { id: 'beta', provider: 'anthropic', contextWindow: 64_000, isDefault: true },
    ]);
    // Service accounts see the same list.
    expect(await models(api.acme.serviceAccount.apiKey)).toHaveLength(2);
  });

  it("adds the organization's custom models and keeps to its model policy", async () => {
    const house = { id: 'house', model: 'llama-3', baseUrl: 'http://127.0.0.1:9/v1', provider: 'anthropic', contextWindow: 50_000 };
    await setControls({ customModels: [house] });
    expect(await models()).toContainEqual({ id: 'custom:house', provider: 'anthropic', contextWindow: 50_000, isDefault: false });
    // Another organization does not see them.
    expect((await models(api.globex.members.user.apiKey)).map((m: { id: string }) => m.id)).toEqual(['alpha', 'beta']);

    await setControls({ customModels: [house], modelPolicy: { blockedModelIds: ['beta'] } });
    expect((await models()).map((m: { id: string; isDefault: boolean }) => [m.id, m.isDefault])).toEqual([
      ['alpha', true],
      ['custom:house', false],
    ]);
    await setControls({ customModels: [house], modelPolicy: { allowCustomModels: false } });
    expect((await models()).map((m: { id: string }) => m.id)).toEqual(['alpha', 'beta']);
    await setControls({ customModels: [house], modelPolicy: { allowedModelIds: ['custom:house'] } });
    expect(await models()).toEqual([{ id: 'custom:house', provider: 'anthropic', contextWindow: 50_000, isDefault: true }]);

    // A session may not name a model the policy leaves out; nothing is created.
    const before = await api.db.prisma.session.count();
    const refused = await api.call('POST', '/api/v0/sessions', {
      as: api.acme.members.user.apiKey,
      body: { computerId: 'cmp_none', sessionSettings: { model: 'alpha' } },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/"alpha" is not allowed by the organization's model policy; GET \/api\/v0\/models/);
    expect(await api.db.prisma.session.count()).toBe(before);
    await setControls({});
  });
});
