import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRASHED_TOOL } from '../../src/modules/sessions/turn-runner.ts';
import { createTestDatabase } from '../support/databases.ts';
import { skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../support/models-file.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { BACKENDS } from '../support/test-db.ts';
import { seedDataDir } from '../support/pglite-template.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The control plane killed with SIGKILL in the middle of a turn (a tool running on the computer),
 * then started again: the turn job comes back once its heartbeat is missed, the unanswered tool
 * call gets an error result, the model continues, and the session ends idle.
 */
describe.skipIf(skipMachineTests).each(BACKENDS)('a control-plane crash mid-turn on %s', (backend) => {
  let machine: TestMachine;
  let model: ModelServer;
  let models: ReturnType<typeof writeModelsFile>;
  let env: Record<string, string>;
  let server: ServerProcess | undefined;
  let drop: (() => Promise<void>) | undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-crash-'));

  beforeAll(async () => {
    [machine, model] = await Promise.all([startMachine(), startModelServer()]);
    models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
    env = { ...models.env, AGENTPLANE_DATA_DIR: dataDir };
    if (backend === 'postgres') {
      const created = await createTestDatabase();
      env.DATABASE_URL = created.url;
      drop = created.drop;
    } else seedDataDir(dataDir);
  });

  afterAll(async () => {
    await server?.stop('SIGKILL');
    await drop?.();
    models?.dispose();
    await model?.close();
    await machine?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('continues the turn after a restart and never leaves the session running', { timeout: 120_000 }, async () => {
    server = await startServerProcess(env);
    const key = server.firstStartKey!;
    expect(key).toMatch(/^apk_/);
    const call = async (url: string, method: string, p: string, body?: unknown) => {
      const res = await fetch(`${url}${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
    };
    machine.sshd.authorizeKey((await call(server.url, 'GET', '/api/v0/computers/ssh-public-key')).body.publicKey);
    const computer = await call(server.url, 'POST', '/api/v0/computers', {
      name: 'crash-box',
      provider: 'byom',
      remoteUser: machine.sshd.username,
      connection: { host: machine.sshd.host, port: machine.sshd.port },
    });
    expect(computer.status, computer.body?.detail).toBe(201);
    const created = await call(server.url, 'POST', '/api/v0/sessions', {
      computerId: computer.body.id,
      cwd: machine.scratch,
      sessionSettings: { model: 'coder', autonomyLevel: 'high' },
    });
    expect(created.status, created.body?.detail).toBe(201);
    const id = created.body.sessionId as string;

    const marker = `ap-crash-${Date.now()}`;
    model.enqueue(
      { toolCalls: [{ id: 'call_build', name: 'run_command', arguments: { command: `sleep 120; echo ${marker}` } }] },
      { text: 'The build was interrupted by a restart; run it again when you are ready.' },
    );
    expect((await call(server.url, 'POST', `/api/v0/sessions/${id}/messages`, { text: 'Run the build.' })).status).toBe(200);
    await waitFor('the build on the machine', async () => (await machine.sh(`pgrep -f '[s]leep 120; echo ${marker}' || true`)).trim() !== '', 20_000, 100);

    expect(await server.stop('SIGKILL')).toBeNull();
    server = await startServerProcess(env);
    const status = async () => (await call(server!.url, 'GET', `/api/v0/sessions/${id}`)).body.status as string;
    expect(await status()).toBe('running');
    await waitFor('the continued turn to end', async () => (await status()) === 'idle', 60_000, 250);

    const messages = [...(await call(server.url, 'GET', `/api/v0/sessions/${id}/messages?limit=100`)).body.messages].reverse();
    expect(messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[2].content).toEqual([{ type: 'tool_result', toolUseId: 'call_build', content: CRASHED_TOOL, isError: true }]);
    expect(messages[3].content).toEqual([{ type: 'text', text: 'The build was interrupted by a restart; run it again when you are ready.' }]);
    expect(model.remaining()).toBe(0);
  });
});
