import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEgressGuard, EgressRefused } from '../../src/egress/guard.ts';
import { parseEgressAllow } from '../../src/egress/policy.ts';
import { newUuid } from '../../src/lib/ids.ts';
import { enqueueEvaluation } from '../../src/modules/readiness/jobs.ts';
import { createModelClient, ModelCallFailed } from '../../src/agent/index.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { BACKENDS } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

/** A listener on one loopback address that answers 200, or redirects to `redirectTo`. */
async function listener(host: string, redirectTo?: string): Promise<{ url: string; hits: () => number; close(): Promise<void> }> {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    if (redirectTo) res.writeHead(302, { location: redirectTo }).end();
    else res.writeHead(200, { 'content-type': 'text/plain' }).end('reached');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://${host}:${port}/`, hits: () => hits, close: () => new Promise((r) => server.close(() => r())) };
}

const WORDS = /connects to 127\.0\.0\.1, a loopback address, .*AGENTPLANE_EGRESS_ALLOW/;

describe('the egress guard against real listeners on loopback', () => {
  let target: Awaited<ReturnType<typeof listener>>;
  beforeAll(async () => {
    target = await listener('127.0.0.1');
  });
  afterAll(() => target?.close());

  it('refuses loopback by default, before a request is sent, and reaches it when allowed', async () => {
    const refused = createEgressGuard(parseEgressAllow(undefined));
    const before = target.hits();
    const err = await refused.fetch(target.url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EgressRefused);
    expect((err as Error).message).toMatch(WORDS);
    expect((err as Error).message).toContain(target.url.replace(/\/$/, ''));
    await expect(refused.check(target.url)).rejects.toThrow(WORDS);
    await expect(refused.fetch(target.url.replace('127.0.0.1', '[::ffff:127.0.0.1]'))).rejects.toThrow(/loopback/);
    expect(target.hits()).toBe(before);

    const allowed = createEgressGuard(parseEgressAllow('127.0.0.1/32'));
    expect(await (await allowed.fetch(target.url)).text()).toBe('reached');
    expect(target.hits()).toBe(before + 1);
  });

  it('checks names as they resolve, and host names the operator allows', async () => {
    const byName = target.url.replace('127.0.0.1', 'localhost');
    await expect(createEgressGuard(parseEgressAllow(undefined)).fetch(byName)).rejects.toThrow(/loopback/);
    expect((await createEgressGuard(parseEgressAllow('localhost')).fetch(byName)).status).toBe(200);
  });

  it('checks every connection a redirect leads to', async () => {
    const hop = await listener('127.0.0.2', target.url);
    try {
      const guard = createEgressGuard(parseEgressAllow('127.0.0.2/32'));
      await expect(guard.fetch(hop.url)).rejects.toThrow(WORDS);
      expect(hop.hits()).toBe(1);
    } finally {
      await hop.close();
    }
  });

  it('resolves again at connection time, so a name that rebinds to loopback after the check is refused', async () => {
    const answers = ['93.184.216.34', '127.0.0.1'];
    const guard = createEgressGuard(parseEgressAllow(undefined), async () => [answers.shift() ?? '127.0.0.1']);
    const url = target.url.replace('127.0.0.1', 'rebinding.example');
    await expect(guard.check(url)).resolves.toMatchObject({ host: 'rebinding.example', addresses: ['93.184.216.34'] });
    await expect(guard.fetch(url)).rejects.toThrow(/rebinding\.example.*connects to 127\.0\.0\.1, a loopback address/);
  });

  it("fails a tenant's model call at run time with the same words, and calls it when allowed", async () => {
    const model: ModelServer = await startModelServer();
    try {
      const config = { id: 'custom:house', provider: 'openai-compatible' as const, baseUrl: model.baseUrl, apiKey: model.apiKey };
      const refused = createModelClient({ ...config, fetch: createEgressGuard(parseEgressAllow(undefined)).fetch });
      const err = await refused
        .complete({ system: 's', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelCallFailed);
      expect((err as Error).message).toMatch(WORDS);
      expect(model.requests).toHaveLength(0);

      model.enqueue({ text: 'hello' });
      const allowed = createModelClient({ ...config, fetch: createEgressGuard(parseEgressAllow('127.0.0.0/8')).fetch });
      const done = await allowed.complete({ system: 's', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [] });
      expect(done.content).toEqual([{ type: 'text', text: 'hello' }]);
    } finally {
      await model.close();
    }
  });
});

describe.each(BACKENDS)('URLs tenants control, over HTTP on %s (default egress policy)', (backend) => {
  let api: TestApi;
  let target: Awaited<ReturnType<typeof listener>>;
  beforeAll(async () => {
    [api, target] = await Promise.all([startTestApi(backend, { worker: true }), listener('127.0.0.1')]);
  });
  afterAll(async () => {
    await target?.close();
    await api?.close();
  });

  it("refuses a custom model's loopback base URL with 400 naming the field, URL, address and variable, changing nothing", async () => {
    const owner = api.acme.members.owner.apiKey;
    const res = await api.call('PUT', '/api/v0/organization/enterprise-controls', {
      as: owner,
      body: { settings: { customModels: [{ id: 'house', model: 'm', baseUrl: `${target.url}v1` }] } },
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/^settings\.customModels\[0\]\.baseUrl: http:\/\/127\.0\.0\.1:\d+ connects to 127\.0\.0\.1, a loopback address/);
    expect(res.body.metadata).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), address: '127.0.0.1', variable: 'AGENTPLANE_EGRESS_ALLOW' });
    expect((await api.call('GET', '/api/v0/organization/enterprise-controls', { as: owner })).body).toEqual({ revision: 0, settings: {} });
    // A name that does not resolve now cannot be judged: it is checked again when it is called.
    const unresolved = await api.call('PUT', '/api/v0/organization/enterprise-controls', {
      as: owner,
      body: { settings: { customModels: [{ id: 'house', model: 'm', baseUrl: 'https://models.invalid/v1' }] } },
    });
    expect(unresolved.status).toBe(200);
  });

  it('refuses a readiness evaluation of a loopback repository, and fails one queued before the policy changed', async () => {
    const user = api.acme.members.user.apiKey;
    const base = '/api/organization/agent-readiness-reports';
    const res = await api.call('POST', `${base}/evaluate`, { as: user, body: { repoUrl: `${target.url}acme/app.git` } });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(WORDS);
    expect(await api.db.prisma.readinessEvaluation.count({ where: { organizationId: api.acme.id } })).toBe(0);

    const id = newUuid();
    await api.db.prisma.readinessEvaluation.create({
      data: {
        id,
        organizationId: api.acme.id,
        requestedBy: { kind: 'user', userId: api.acme.members.user.userId, organizationId: api.acme.id, role: 'user' },
        repoUrl: `${target.url}acme/app.git`,
        status: 'queued',
        createdAt: new Date(),
      },
    });
    const before = target.hits();
    await enqueueEvaluation(api.queue, id, api.db.prisma);
    const failed = await waitFor('the evaluation to fail', async () => {
      const row = await api.db.prisma.readinessEvaluation.findUniqueOrThrow({ where: { id } });
      return row.status === 'failed' ? row : undefined;
    });
    expect(failed.error).toMatch(WORDS);
    expect(target.hits()).toBe(before);
  });
});
