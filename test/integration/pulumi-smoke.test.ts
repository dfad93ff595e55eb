import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { local } from '@pulumi/command';
import { LocalWorkspace } from '@pulumi/pulumi/automation/index.js';
import { engineEnv, pulumiCommand } from '../../src/provisioning/pulumi/engine-env.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { skipWithout } from '../support/parts.ts';

const toolchain = locatePulumiToolchain();
const missing = `Pulumi CLI ${toolchain.version} or pulumi-resource-command missing under ${path.dirname(toolchain.binDir)}; run scripts/pulumi-toolchain.sh`;
const skip = skipWithout('the Pulumi smoke test', toolchain.available ? undefined : missing);

describe.skipIf(skip)('Pulumi toolchain, offline on a file:// backend', () => {
  it('runs an inline program with a local.Command up and down again', { timeout: 180_000 }, async () => {
    if (!toolchain.available) throw new Error(missing);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'agentplane-pulumi-smoke-'));
    try {
      const envVars = engineEnv({ backendUrl: pathToFileURL(dir).href, passphrase: 'smoke-test', toolchain });
      const stack = await LocalWorkspace.createOrSelectStack(
        {
          projectName: 'agentplane-smoke',
          stackName: 'smoke',
          program: async () => {
            const hello = new local.Command('hello', { create: 'echo hello' });
            return { stdout: hello.stdout };
          },
        },
        {
          workDir: dir,
          pulumiCommand: await pulumiCommand(toolchain),
          envVars,
        },
      );

      const up = await stack.up();
      expect(up.summary.result).toBe('succeeded');
      expect(up.outputs.stdout?.value).toBe('hello');
      expect(up.summary.resourceChanges).toEqual({ create: 2 });

      const down = await stack.destroy();
      expect(down.summary.result).toBe('succeeded');
      expect(down.summary.resourceChanges).toEqual({ delete: 2 });

      await stack.workspace.removeStack('smoke');
      expect(await stack.workspace.listStacks()).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
