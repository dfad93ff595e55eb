import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { kubernetesPluginPath } from '../../src/provisioning/providers/kubernetes/availability.ts';
import { devStack } from './dev-stack.ts';
import { skipWithout } from '../support/parts.ts';

const toolchain = locatePulumiToolchain();
const plugin = kubernetesPluginPath(toolchain.pulumiHome);
const skip = skipWithout(
  'the deploy preview',
  toolchain.available && existsSync(plugin)
    ? undefined
    : `pulumi-resource-kubernetes is not in ${path.dirname(plugin)} (bash scripts/pulumi-toolchain.sh builds upstream's)`,
);

describe.skipIf(skip)('pulumi preview of the dev stack, rendered to a directory', () => {
  it('previews and renders the manifests without a cluster', { timeout: 300_000 }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'agentplane-deploy-preview-'));
    try {
      const out = path.join(dir, 'manifests');
      const stack = await devStack(toolchain, dir, 'dev', { renderYamlToDirectory: out });
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
