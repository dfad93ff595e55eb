import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';

const N = 300;
const documents = Array.from(
  { length: N },
  (_, i) => `apiVersion: agentplane.dev/v1\nkind: ComputerTemplate\nmetadata:\n  name: tpl-${i}\nspec:\n  repos: []\n  setupScript: echo ${i}\n`,
).join('---\n');

/** `agentplane serve` killed with SIGKILL while an apply runs: after a restart, the old revision or the new one, never half of one. */
describe('a config apply killed midway', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-config-crash-'));
  let server: ServerProcess | undefined;
  afterAll(async () => {
    await server?.stop('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('leaves all of the revision or none of it', { timeout: 180_000 }, async () => {
    const env = { AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_LOCAL_PROVIDER: 'false' };
    server = await startServerProcess(env);
    const key = server.firstStartKey!;
    const call = (url: string, method: string, p: string, body?: unknown) =>
      fetch(`${url}${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    const applying = call(server.url, 'POST', '/api/v0/config/apply', { files: [{ path: 'templates.yaml', content: documents }] }).catch(() => undefined);
    // The apply's creates take seconds; the kill lands while its transaction is open (if it lands
    // before or after, the assertion below holds all the same: it is what a crash at any moment must leave).
    await sleep(1_500);
    expect(await server.stop('SIGKILL')).toBeNull();
    await applying;

    server = await startServerProcess(env);
    const templates = ((await (await call(server.url, 'GET', '/api/v0/computer-templates')).json()) as { templates: unknown[] }).templates.length;
    const revisions = ((await (await call(server.url, 'GET', '/api/v0/config/revisions')).json()) as { revisions: unknown[] }).revisions.length;
    expect([0, N]).toContain(templates);
    expect(revisions).toBe(templates === N ? 1 : 0);
    // And the same documents apply cleanly afterwards: to completion, or as nothing left to do.
    const again = await call(server.url, 'POST', '/api/v0/config/apply', { files: [{ path: 'templates.yaml', content: documents }] });
    expect(again.status).toBe(200);
    const after = ((await (await call(server.url, 'GET', '/api/v0/computer-templates')).json()) as { templates: unknown[] }).templates.length;
    expect(after).toBe(N);
  });
});
