import { expect } from 'vitest';
import type { FileModel } from '../../src/agent/models.ts';
import { ALLOW_LOOPBACK, startTestApi, type TestApi } from './api.ts';
import { startMachine, type TestMachine } from './machine.ts';
import { startModelServer, type ModelServer, type ModelServerOptions } from './model-server.ts';
import { writeModelsFile } from './models-file.ts';
import type { Backend } from './test-db.ts';

/** What session tests over HTTP stand on: the app with its worker, a scripted model and a byom computer. */
export interface SessionHarness {
  api: TestApi;
  machine: TestMachine;
  model: ModelServer;
  /** A byom computer on the machine's sshd, owned by `user`. */
  computerId: string;
  /** The API key of acme's plain member. */
  user: string;
  close(): Promise<void>;
}

/**
 * Starts a real sshd machine and a scripted model server, writes a models file naming the models
 * `models` returns for that server (with the API keys their `apiKeyEnv` name), starts the app on
 * `backend` with its worker, and registers the machine as a byom computer.
 */
export async function startSessionHarness(
  backend: Backend,
  opts: { computerName: string; server?: ModelServerOptions; models(model: ModelServer): { models: FileModel[]; keys: Record<string, string> } },
): Promise<SessionHarness> {
  const [machine, model] = await Promise.all([startMachine(), startModelServer(opts.server)]);
  const wanted = opts.models(model);
  const models = writeModelsFile(wanted.models, wanted.keys);
  Object.assign(process.env, models.env);
  // The scripted model server listens on loopback, where custom models reach only when allowed.
  const api = await startTestApi(backend, { worker: true, env: ALLOW_LOOPBACK });
  const user = api.acme.members.user.apiKey;
  machine.sshd.authorizeKey((await api.call('GET', '/api/v0/computers/ssh-public-key', { as: user })).body.publicKey);
  const res = await api.call('POST', '/api/v0/computers', {
    as: user,
    body: { name: opts.computerName, provider: 'byom', remoteUser: machine.sshd.username, connection: { host: machine.sshd.host, port: machine.sshd.port } },
  });
  expect(res.status, res.body.detail).toBe(201);
  return {
    api,
    machine,
    model,
    computerId: res.body.id,
    user,
    close: async () => {
      await api.close();
      await model.close();
      await machine.stop();
      models.dispose();
    },
  };
}
