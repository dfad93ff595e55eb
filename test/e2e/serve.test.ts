import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresMissing } from '../support/databases.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { skipWithout } from '../support/parts.ts';
import { waitFor } from '../support/wait.ts';

const JWT_SECRET = 'e2e-secret-e2e-secret-e2e-secret-123';
const OWNER = 'owner@example.test';

type Backend = { name: string; env: () => Promise<{ env: Record<string, string>; cleanup(): Promise<void> }> };

const backends: Backend[] = [
  {
    name: 'PGlite (embedded default)',
    env: async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-e2e-'));
      return { env: { AGENTPLANE_DATA_DIR: dir }, cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'PostgreSQL (DATABASE_URL)',
    env: async () => {
      const db = await createTestDatabase();
      return { env: { DATABASE_URL: db.url }, cleanup: db.drop };
    },
  },
];

const requirePostgres = skipWithout('agentplane serve on PostgreSQL', postgresMissing());

describe.each(backends)('agentplane serve on $name', (backend) => {
  let server: ServerProcess;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    if (backend.name.startsWith('PostgreSQL') && requirePostgres) return;
    const target = await backend.env();
    cleanup = target.cleanup;
    server = await startServerProcess({
      ...target.env,
      AGENTPLANE_JWT_SECRET: JWT_SECRET,
      AGENTPLANE_BOOTSTRAP_EMAIL: OWNER,
      // Whether the local provider is usable depends on the machine; test/e2e/computers-local.test.ts covers it.
      AGENTPLANE_LOCAL_PROVIDER: 'false',
    });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await cleanup?.();
  });

  const skip = () => backend.name.startsWith('PostgreSQL') && requirePostgres;

  it('prints the owner API key once on the first start of an empty database', ({ skip: s }) => {
    if (skip()) s();
    expect(server.firstStartKey).toMatch(/^apk_[0-9a-z]{40}$/);
    // The key is printed for the operator, never written into a log line.
    const logLines = server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    expect(logLines.join('\n')).not.toContain(server.firstStartKey);
  });

  it('serves the OpenAPI document without credentials', async ({ skip: s }) => {
    if (skip()) s();
    const res = await fetch(`${server.url}/api/v0/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; info: { version: string }; paths: Record<string, unknown> };
    expect(doc.openapi).toMatch(/^3\.0\./);
    expect(doc.info.version).toBe('0.1.0');
    expect(doc.paths['/api/v0/computers/providers']).toBeDefined();
  });

  it('answers 401 with the error body when credentials are missing or wrong', async ({ skip: s }) => {
    if (skip()) s();
    for (const headers of [{}, { authorization: 'Bearer apk_' + 'x'.repeat(40) }, { authorization: 'Basic abc' }]) {
      const res = await fetch(`${server.url}/api/v0/computers/providers`, { headers });
      expect(res.status).toBe(401);
      const body = (await res.json()) as Record<string, unknown>;
      expect(Object.keys(body).sort()).toEqual(['detail', 'status', 'title']);
      expect(body).toMatchObject({ status: 401, title: 'Unauthorized' });
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('lists the usable managed providers for an API key', async ({ skip: s }) => {
    if (skip()) s();
    const res = await fetch(`${server.url}/api/v0/computers/providers`, {
      headers: { authorization: `Bearer ${server.firstStartKey}` },
    });
    expect(res.status).toBe(200);
    // `program` (templates' Pulumi YAML programs) needs only the toolchain, which this machine may have.
    const { providers } = (await res.json()) as { providers: string[] };
    expect(providers.filter((p) => p !== 'program')).toEqual([]);
  });

  it('accepts a JWT access token for the bootstrapped owner', async ({ skip: s }) => {
    if (skip()) s();
    const me = await fetch(`${server.url}/api/v0/computers/providers`, {
      headers: { authorization: `Bearer ${server.firstStartKey}` },
    });
    expect(me.status).toBe(200);
    const orgId = /\((org_[0-9a-z]+)\)/.exec(server.output())![1]!;
    const token = await new SignJWT({ email: OWNER, org_id: orgId })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('idp|owner-1')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(JWT_SECRET));
    const res = await fetch(`${server.url}/api/v0/computers/providers`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const forged = await new SignJWT({ email: OWNER, org_id: orgId })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('idp|owner-1')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('another-secret-another-secret-12345'));
    const bad = await fetch(`${server.url}/api/v0/computers/providers`, { headers: { authorization: `Bearer ${forged}` } });
    expect(bad.status).toBe(401);
  });

  it('answers unknown routes, malformed JSON and oversized bodies with the error body', async ({ skip: s }) => {
    if (skip()) s();
    const unknown = await fetch(`${server.url}/api/v0/nope`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ status: 404, title: 'Not Found' });

    const malformed = await fetch(`${server.url}/api/v0/computers/providers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name": ',
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({ detail: 'The request body is not valid JSON', status: 400, title: 'Bad Request' });

    const big = await fetch(`${server.url}/api/v0/computers/providers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ blob: 'x'.repeat(2 * 1024 * 1024) }),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ status: 413, title: 'Payload Too Large' });

    const analytics = await fetch(`${server.url}/api/v1/analytics/nope`);
    expect(analytics.status).toBe(404);
    const body = (await analytics.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['detail', 'requestId', 'status', 'title']);
  });

  it('reports ready with the database reachable and migrations current', async ({ skip: s }) => {
    if (skip()) s();
    const res = await fetch(`${server.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready', checks: { database: true, migrations: true } });
  });

  it('on SIGTERM finishes the in-flight request, refuses new ones and exits 0', async ({ skip: s }) => {
    if (skip()) s();
    const { port, hostname } = new URL(server.url);
    // An in-flight request: headers sent, body only half way when SIGTERM arrives.
    const socket = net.connect(Number(port), hostname);
    await new Promise<void>((r) => socket.once('connect', () => r()));
    let response = '';
    socket.on('data', (d) => (response += d.toString()));
    const body = '{"a":"' + 'y'.repeat(50) + '"}';
    socket.write(`POST /api/v0/computers/providers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body.slice(0, 10));
    await new Promise((r) => setTimeout(r, 200));
    const exit = server.stop('SIGTERM');
    // New connections are refused once the signal is handled (a loaded machine may take a moment).
    await waitFor(
      'the listener to refuse new connections',
      () =>
        fetch(`${server.url}/healthz`).then(
          () => false,
          () => true,
        ),
      5_000,
    );
    socket.write(body.slice(10));
    expect(await exit).toBe(0);
    expect(response).toMatch(/^HTTP\/1\.1 404 /);
  });
});
