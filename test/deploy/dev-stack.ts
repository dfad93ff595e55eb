import { copyFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { LocalWorkspace, type Stack } from '@pulumi/pulumi/automation/index.js';
import { deploy } from '../../src/deploy/program.ts';
import { engineEnv, pulumiCommand } from '../../src/provisioning/pulumi/engine-env.ts';
import type { PulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { REPO_ROOT, TEST_SECRETS } from './stack-harness.ts';

/**
 * The dev stack from stacks/ in a scratch project on a file:// backend in `dir`, with the secrets
 * set and `extra` settings on top; the program runs inline through the Automation API (no nodejs
 * language host needed), the same deploy() src/deploy/index.ts exports.
 */
export async function devStack(toolchain: PulumiToolchain, dir: string, stackName: string, extra: Record<string, string>): Promise<Stack> {
  await copyFile(path.join(REPO_ROOT, 'stacks', 'Pulumi.dev.yaml'), path.join(dir, `Pulumi.${stackName}.yaml`));
  const stack = await LocalWorkspace.createOrSelectStack(
    { projectName: 'agentplane', stackName, program: async () => deploy() },
    {
      workDir: dir,
      pulumiCommand: await pulumiCommand(toolchain),
      envVars: engineEnv({ backendUrl: pathToFileURL(dir).href, passphrase: 'deploy-test', toolchain }),
    },
  );
  await stack.setAllConfig({
    'agentplane:pulumiPassphrase': { value: TEST_SECRETS.pulumiPassphrase, secret: true },
    'agentplane:postgresPassword': { value: TEST_SECRETS.postgresPassword, secret: true },
    ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [`agentplane:${k}`, { value: v }])),
  });
  return stack;
}
