import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { local } from '@pulumi/command';
import { secret } from '@pulumi/pulumi';
import { LocalWorkspace } from '@pulumi/pulumi/automation/index.js';
import { createLogger } from '../../src/lib/logger.ts';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import type { StackProgram } from '../../src/provisioning/programs/index.ts';
import { COMPUTERS_PROJECT, createComputerStacks } from '../../src/provisioning/pulumi/computer-stacks.ts';
import { engineEnv, pulumiCommand } from '../../src/provisioning/pulumi/engine-env.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { skipWithout } from '../support/parts.ts';
import { stackConfig } from './computer-stack-config.ts';

const toolchain = locatePulumiToolchain();
const missing = `Pulumi CLI ${toolchain.version} or pulumi-resource-command missing under ${path.dirname(toolchain.binDir)}; run scripts/pulumi-toolchain.sh`;
const skip = skipWithout("the computer stacks' secrets test", toolchain.available ? undefined : missing);

const SECRET = 'never-in-state-as-plaintext';
const PASSPHRASE = 'an old deployment passphrase';
const log = createLogger({ level: 'silent' });

/** A computer whose one resource takes a secret input, so the state holds a ciphertext. */
const program: StackProgram = {
  kind: 'builtin',
  name: 'test',
  // Its input comes from the stack's agentplane:* config: the user is the computer's name.
  program: async (input) => {
    const host = new local.Command('host', { create: 'echo 127.0.0.1', environment: { TOKEN: secret(SECRET) } });
    return { ssh: { host: host.stdout, port: 22, user: input.name, hostKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITEST' }, pausable: true };
  },
};

const input = (computerId: string) => stackConfig(computerId, `user-${computerId}`);

describe.skipIf(skip)("computer stacks' secrets provider", () => {
  let dir: string;
  let backendUrl: string;
  const stackKeys = createSecretBox(randomBytes(32));
  // Each call is what another control-plane process would make: its own keeper, address and token.
  const stacks = () => createComputerStacks({ backendUrl, passphrase: PASSPHRASE, workspacesDir: path.join(dir, 'workspaces'), toolchain, stackKeys });
  const stateFile = (id: string) => path.join(dir, 'state', '.pulumi', 'stacks', COMPUTERS_PROJECT, `${id}.json`);
  const settingsFile = (id: string) => path.join(dir, 'workspaces', id, `Pulumi.${id}.yaml`);

  beforeEach(async () => {
    if (!toolchain.available) throw new Error(missing);
    dir = await mkdtemp(path.join(os.tmpdir(), 'agentplane-stack-secrets-'));
    backendUrl = pathToFileURL(path.join(dir, 'state')).href;
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('wraps a new stack’s data key with the keeper, keeps its secrets encrypted, and destroys it from another process', { timeout: 180_000 }, async () => {
    const id = 'cmp_keeperstack000000001';
    const endpoint = await stacks().up(program, input(id), { log, fresh: true });
    expect(endpoint).toMatchObject({ kind: 'ssh', host: '127.0.0.1', user: `user-${id}`, pausable: true });

    expect(await readFile(settingsFile(id), 'utf8')).toMatch(/^secretsprovider: hashivault:\/\/agentplane-stacks$/m);
    const state = await readFile(stateFile(id), 'utf8');
    const deployment = JSON.parse(state).checkpoint.latest;
    expect(deployment.secrets_providers).toMatchObject({ type: 'cloud', state: { url: 'hashivault://agentplane-stacks' } });
    // The wrapping key is nowhere in the state: only the wrapped data key and the ciphertexts are.
    expect(state).not.toContain(SECRET);
    const host = deployment.resources.find((r: { urn: string }) => r.urn.endsWith('::host'));
    expect(host.inputs.environment.TOKEN).toMatchObject({ ciphertext: expect.any(String) });

    await stacks().destroy(program, input(id), { log });
    expect(existsSync(stateFile(id))).toBe(false);
  });

  it('is updated and destroyed by a replica that never saw its workspace directory', { timeout: 180_000 }, async () => {
    const id = 'cmp_otherreplica00000001';
    await stacks().up(program, input(id), { log, fresh: true });
    // Another replica shares the backend but has a data directory of its own.
    const replica = createComputerStacks({ backendUrl, passphrase: PASSPHRASE, workspacesDir: path.join(dir, 'replica'), toolchain, stackKeys });
    expect(await replica.up(program, input(id), { log })).toMatchObject({ host: '127.0.0.1', user: `user-${id}` });
    const state = JSON.parse(await readFile(stateFile(id), 'utf8')).checkpoint.latest;
    expect(state.secrets_providers).toMatchObject({ type: 'cloud', state: { url: 'hashivault://agentplane-stacks' } });
    expect(JSON.stringify(state)).not.toContain(SECRET);
    await replica.destroy(program, input(id), { log });
    expect(existsSync(stateFile(id))).toBe(false);
  });

  it('still updates and destroys a stack created with the passphrase provider', { timeout: 180_000 }, async () => {
    const id = 'cmp_passphrasestack00001';
    // Made as the control plane made stacks before the keeper: passphrase provider, same layout.
    const workDir = path.join(dir, 'workspaces', id);
    await Promise.all([mkdir(workDir, { recursive: true }), mkdir(path.join(dir, 'state'))]);
    const old = await LocalWorkspace.createStack(
      {
        projectName: COMPUTERS_PROJECT,
        stackName: id,
        // The outputs of the built-ins before they kept the programs' contract.
        program: async () => ({
          host: new local.Command('host', { create: 'echo 127.0.0.1' }).stdout,
          port: 22,
          username: 'agent',
          hostPublicKey: 'ssh-ed25519 AAAA',
        }),
      },
      {
        workDir,
        pulumiCommand: await pulumiCommand(toolchain),
        envVars: engineEnv({ backendUrl, passphrase: PASSPHRASE, toolchain }),
        secretsProvider: 'passphrase',
        projectSettings: { name: COMPUTERS_PROJECT, runtime: 'nodejs', backend: { url: backendUrl } },
      },
    );
    await old.up();

    expect(await stacks().up(program, input(id), { log })).toMatchObject({ kind: 'ssh', host: '127.0.0.1', user: `user-${id}` });
    expect(await readFile(settingsFile(id), 'utf8')).toMatch(/^encryptionsalt: v1:/m);
    expect(JSON.parse(await readFile(stateFile(id), 'utf8')).checkpoint.latest.secrets_providers.type).toBe('passphrase');

    await stacks().destroy(program, input(id), { log });
    expect(existsSync(stateFile(id))).toBe(false);
  });
});
