import { copyFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { LocalWorkspace, type Stack } from '@pulumi/pulumi/automation/index.js';
import { engineEnv, pulumiCommand } from '../../src/provisioning/pulumi/engine-env.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { deploy } from '../../src/deploy/program.ts';
import { kubernetesPluginPath } from '../../src/provisioning/providers/kubernetes/availability.ts';
import { REPO_ROOT, TEST_SECRETS } from './stack-harness.ts';

const toolchain = locatePulumiToolchain();
const plugin = kubernetesPluginPath(toolchain.pulumiHome);
const haveTools = toolchain.available && existsSync(plugin);
const missing = `pulumi-resource-kubernetes is not in ${path.dirname(plugin)} (bash scripts/pulumi-toolchain.sh builds agentplane's stand-in)`;
if (!haveTools && process.env.CI === 'true') throw new Error(`CI=true: ${missing}`);
if (!haveTools) console.warn(`skipping the deploy preview: ${missing}`);

/** The dev stack from stacks/ in a scratch project on a file:// backend, run inline (no language host). */
async function devStack(dir: string, stackName: string, extra: Record<string, string>): Promise<Stack> {
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

describe.skipIf(!haveTools)('pulumi preview of the dev stack, rendered to a directory', () => {
  it('previews and renders the manifests without a cluster', { timeout: 300_000 }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'agentplane-deploy-preview-'));
    try {
      const out = path.join(dir, 'manifests');
      const stack = await devStack(dir, 'dev', { renderYamlToDirectory: out });
      const preview = await stack.preview();
      expect(preview.changeSummary.create).toBeGreaterThan(10);
      await stack.up();
      const docs: any[] = [];
      for (const sub of ['0-crd', '1-manifest']) {
        const folder = path.join(out, sub);
        if (!existsSync(folder)) continue;
        for (const f of await readdir(folder)) {
          docs.push(...parseAllDocuments(await readFile(path.join(folder, f), 'utf8')).map((d) => d.toJSON()));
        }
      }
      const kinds = docs.map((d) => `${d.kind}/${d.metadata.name}`);
      expect(kinds).toEqual(expect.arrayContaining(['Deployment/agentplane', 'StatefulSet/agentplane-postgres', 'Role/agentplane-computers']));
      const server = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'agentplane');
      expect(server.spec.template.spec.containers[0].readinessProbe.httpGet.path).toBe('/readyz');
      expect(docs.filter((d) => d.kind === 'Job')).toHaveLength(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
