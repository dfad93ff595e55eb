import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish } from '../../src/modules/events/publish.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from '../support/api.ts';
import { BACKENDS } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Webhooks through real HTTP: endpoints created through the API, events from the API or the
 * event store, deliveries by the server's own worker to a receiver on loopback that verifies
 * signatures with its own HMAC. Retries are scheduled 0.3 s apart here (three retries), answers
 * wait at most 1 s, at most 3 attempts run at once per endpoint, and an endpoint failing for 3 s
 * is disabled.
 */
describe.each(BACKENDS)('webhooks on %s', (backend) => {
  let api: TestApi;
  let receiver: WebhookReceiver;
  let manager: string;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    api = await startTestApi(backend, {
      worker: true,
      env: {
        ...ALLOW_LOOPBACK,
        AGENTPLANE_WEBHOOK_RETRY_SCHEDULE: '0.3,0.3,0.3',
        AGENTPLANE_WEBHOOK_TIMEOUT_SECONDS: '1',
        AGENTPLANE_WEBHOOK_ENDPOINT_CONCURRENCY: '3',
        AGENTPLANE_WEBHOOK_DISABLE_AFTER_HOURS: String(3 / 3600),
      },
    });
    manager = api.acme.members.manager.apiKey;
  });

  afterAll(async () => {
    await api?.close();
    await receiver?.close();
  });

  const subscribe = async (path: string, eventTypes: string[]) => {
    const res = await api.call('POST', '/api/v0/webhooks', { as: manager, body: { url: `${receiver.url}${path}`, eventTypes } });
    expect(res.status, res.body?.detail).toBe(201);
    receiver.secret(path, res.body.secret);
    return res.body as { id: string; secret: string };
  };
  const deliveries = async (webhookId: string) => (await api.call('GET', `/api/v0/webhooks/${webhookId}/deliveries`, { as: manager })).body.deliveries as any[];
  const emit = (type: 'session.idle' | 'session.failed' | 'session.interrupted', n = 0) =>
    publish(api.db.prisma, { type, organizationId: api.acme.id, data: { sessionId: `ses_test_${n}`, status: 'idle' } });
  const at = (path: string) => receiver.received.filter((r) => r.path === path);

  it('creates, reads, updates and deletes endpoints for managers; the secret is answered once and sealed at rest', async () => {
    const created = await api.call('POST', '/api/v0/webhooks', {
      as: manager,
      body: { url: `${receiver.url}/crud`, eventTypes: ['computer.error', 'session.failed'], description: 'pager' },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    expect(created.body).toMatchObject({
      url: `${receiver.url}/crud`,
      eventTypes: ['computer.error', 'session.failed'],
      status: 'enabled',
      description: 'pager',
    });
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const id = created.body.id as string;
    const stored = await api.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id } });
    expect(stored.sealedSecret).not.toContain(created.body.secret.slice(6));
    expect(api.machines.secrets.open(stored.sealedSecret)).toBe(created.body.secret);

    const got = await api.call('GET', `/api/v0/webhooks/${id}`, { as: api.acme.members.owner.apiKey });
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    expect(JSON.stringify((await api.call('GET', '/api/v0/webhooks', { as: manager })).body)).not.toContain(created.body.secret);
    const patched = await api.call('PATCH', `/api/v0/webhooks/${id}`, { as: manager, body: { eventTypes: ['computer.deleted'], enabled: false } });
    expect(patched.body).toMatchObject({ eventTypes: ['computer.deleted'], status: 'disabled' });
    expect((await api.call('GET', `/api/v0/webhooks/${id}`, { as: api.globex.members.owner.apiKey })).status).toBe(404);
    expect((await api.call('GET', '/api/v0/webhooks', { as: api.acme.members.user.apiKey })).status).toBe(403);
    const audits = await api.db.prisma.auditRecord.findMany({ where: { eventType: 'webhook_change', target: { equals: { webhookId: id } } } });
    expect(audits.map((a) => (a.payload as { action: string }).action).sort()).toEqual(['created', 'updated']);
    expect((await api.call('DELETE', `/api/v0/webhooks/${id}`, { as: manager })).status).toBe(204);
    expect((await api.call('GET', `/api/v0/webhooks/${id}`, { as: manager })).status).toBe(404);
  });

  it('refuses URLs the egress policy forbids, and unknown event types, naming what to change', async () => {
    const metadata = await api.call('POST', '/api/v0/webhooks', { as: manager, body: { url: 'http://169.254.169.254/latest', eventTypes: ['session.idle'] } });
    expect(metadata.status).toBe(400);
    expect(metadata.body.detail).toContain('169.254.169.254');
    expect(metadata.body.detail).toContain('AGENTPLANE_EGRESS_ALLOW');
    const unknown = await api.call('POST', '/api/v0/webhooks', { as: manager, body: { url: `${receiver.url}/x`, eventTypes: ['session.nope'] } });
    expect(unknown.status).toBe(400);
  });

  it('delivers an API key revocation signed per Standard Webhooks, verified by an independent HMAC', async () => {
    const hook = await subscribe('/keys', ['apikey.revoked']);
    const key = await api.db.prisma.apiKey.findFirstOrThrow({ where: { serviceAccountId: api.acme.serviceAccount.id } });
    const revoked = await api.call('POST', `/api/v0/service-accounts/${api.acme.serviceAccount.id}/api-keys/${key.id}/revoke`, {
      as: api.acme.members.owner.apiKey,
    });
    expect(revoked.status).toBe(204);
    const [got] = await waitFor('the webhook', () => at('/keys').length > 0 && at('/keys'), 10_000);
    expect(got!.verified).toBe(true);
    expect(got!.headers['content-type']).toBe('application/json');
    const body = JSON.parse(got!.body);
    expect(body).toMatchObject({
      type: 'apikey.revoked',
      data: { apiKeyId: key.id, reason: 'revoked', serviceAccountId: api.acme.serviceAccount.id, organizationId: api.acme.id },
    });
    expect(Date.parse(body.timestamp)).toBeGreaterThan(Date.now() - 60_000);
    expect(got!.body).not.toContain(api.acme.serviceAccount.apiKey);
    // A tampered body or another secret does not verify: the check can fail.
    const { verifyStandardWebhook } = await import('../support/webhook-receiver.ts');
    expect(verifyStandardWebhook(hook.secret, got!.headers, got!.body.replace('revoked', 'revokeD'))).toBe(false);
    const [delivery] = await waitFor('the log', async () => ((await deliveries(hook.id))[0]?.status === 'succeeded' ? deliveries(hook.id) : undefined), 5_000);
    expect(delivery).toMatchObject({ id: got!.headers['webhook-id'], eventType: 'apikey.revoked', status: 'succeeded', attempts: 1, lastStatus: 204 });
    expect(delivery.log).toHaveLength(1);
  });

  it('retries after 500s with the same webhook-id and body until the receiver takes it', async () => {
    const hook = await subscribe('/flaky', ['session.interrupted']);
    receiver.answer('/flaky', [500, 500, 204]);
    await emit('session.interrupted');
    await waitFor('three attempts', () => at('/flaky').length >= 3, 10_000);
    const attempts = at('/flaky');
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
    expect(new Set(attempts.map((a) => a.body)).size).toBe(1);
    expect(attempts.every((a) => a.verified)).toBe(true);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(250);
    const [delivery] = await waitFor('success', async () => ((await deliveries(hook.id))[0]?.status === 'succeeded' ? deliveries(hook.id) : undefined), 5_000);
    expect(delivery.attempts).toBe(3);
    expect(delivery.log.map((l: { status: number }) => l.status)).toEqual([500, 500, 204]);
    expect(delivery.log[0].error).toContain('HTTP 500: receiver says no');
  });

  it('gives up on a receiver that never answers after each attempt times out, and fails the delivery after the last', async () => {
    const hook = await subscribe('/hang', ['session.failed']);
    receiver.answer('/hang', ['hang']);
    await emit('session.failed');
    const [delivery] = await waitFor(
      'the delivery to fail',
      async () => ((await deliveries(hook.id))[0]?.status === 'failed' ? deliveries(hook.id) : undefined),
      20_000,
      200,
    );
    expect(delivery.attempts).toBeGreaterThanOrEqual(2);
    for (const entry of delivery.log) {
      expect(entry.status).toBeUndefined();
      expect(entry.error).toBe('no answer within 1000 ms');
      expect(entry.durationMs).toBeGreaterThanOrEqual(900);
    }
  });

  it('bounds the attempts in flight per endpoint', async () => {
    const hook = await subscribe('/slow', ['session.idle']);
    receiver.answer('/slow', [200], { delayMs: 300 });
    for (let n = 0; n < 10; n++) await emit('session.idle', n);
    await waitFor('ten deliveries', async () => (await deliveries(hook.id)).filter((d) => d.status === 'succeeded').length === 10, 20_000, 200);
    expect(receiver.maxConcurrent.get('/slow')).toBe(3);
  });

  it('disables an endpoint after sustained failure, with an event and an audit record; redelivery after re-enabling', async () => {
    const watcher = await subscribe('/watcher', ['webhook.disabled']);
    const hook = await subscribe('/down', ['session.idle']);
    receiver.answer('/down', [503]);
    let n = 100;
    await waitFor(
      'the endpoint to be disabled',
      async () => {
        await emit('session.idle', n++);
        return (await api.call('GET', `/api/v0/webhooks/${hook.id}`, { as: manager })).body.status === 'disabled';
      },
      20_000,
      500,
    );
    const disabled = (await api.call('GET', `/api/v0/webhooks/${hook.id}`, { as: manager })).body;
    expect(disabled.disabledReason).toMatch(/every delivery attempt has failed since/);
    const audit = await api.db.prisma.auditRecord.findFirstOrThrow({
      where: { eventType: 'webhook_change', source: 'webhook_delivery', target: { equals: { webhookId: hook.id } } },
    });
    expect(audit).toMatchObject({ actorKind: 'system', target: { webhookId: hook.id }, payload: { action: 'disabled' } });
    const [notice] = await waitFor('webhook.disabled at the watcher', () => at('/watcher').length > 0 && at('/watcher'), 10_000);
    expect(notice!.verified).toBe(true);
    expect(JSON.parse(notice!.body)).toMatchObject({ type: 'webhook.disabled', data: { webhookId: hook.id } });
    expect(watcher.id).not.toBe(hook.id);

    // Nothing more is sent while disabled; its deliveries are failed and redelivery says why it cannot.
    const log = await deliveries(hook.id);
    expect(log.every((d) => d.status === 'failed')).toBe(true);
    const refused = await api.call('POST', `/api/v0/webhooks/${hook.id}/deliveries/${log[0].id}/redeliver`, { as: manager });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/enable it/);

    receiver.answer('/down', [204]);
    expect((await api.call('PATCH', `/api/v0/webhooks/${hook.id}`, { as: manager, body: { enabled: true } })).body).toMatchObject({ status: 'enabled' });
    const target = log.find((d) => d.attempts > 0)!;
    const before = at('/down').filter((r) => r.headers['webhook-id'] === target.id).length;
    const again = await api.call('POST', `/api/v0/webhooks/${hook.id}/deliveries/${target.id}/redeliver`, { as: manager });
    expect(again.status).toBe(202);
    const done = await waitFor(
      'the redelivery',
      async () => {
        const d = (await api.call('GET', `/api/v0/webhooks/${hook.id}/deliveries/${target.id}`, { as: manager })).body;
        return d.status === 'succeeded' && d;
      },
      10_000,
      100,
    );
    expect(done.log.at(-1).status).toBe(204);
    expect(done.log.length).toBe(target.log.length + 1);
    const sent = at('/down').filter((r) => r.headers['webhook-id'] === target.id);
    expect(sent.length).toBe(before + 1);
    expect(sent.at(-1)!.body).toBe(target.payload);
    expect(sent.at(-1)!.verified).toBe(true);
  });
});
