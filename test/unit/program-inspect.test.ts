import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectProgram } from '../../src/provisioning/programs/inspect.ts';
import { ProgramProblem } from '../../src/provisioning/programs/index.ts';
import type { PulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';

/** The checks a checked-out program passes before Pulumi runs it, against a toolchain holding two plugins. */
const root = mkdtempSync(path.join(os.tmpdir(), 'agentplane-inspect-'));
const pulumiHome = path.join(root, 'home');
for (const plugin of ['resource-kubernetes-v4.34.2', 'resource-command-v1.2.1', 'resource-random-v4.0.0'])
  mkdirSync(path.join(pulumiHome, 'plugins', plugin), { recursive: true });
const toolchain = { pulumiHome } as PulumiToolchain;
const opts = { allowed: ['kubernetes', 'command', 'docker'], toolchain };
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
async function inspect(files: Record<string, string>) {
  const dir = path.join(root, `p${n++}`);
  mkdirSync(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content);
  return inspectProgram(dir, 'repo@abc:envs/x', opts);
}
const project = (body: string, runtime = 'yaml') => ({ 'Pulumi.yaml': `name: x\nruntime: ${runtime}\n${body}` });

describe('program inspection', () => {
  it('passes a program of allowed, installed providers, runtime as a string or {name: yaml}', async () => {
    await expect(inspect(project('resources:\n  s:\n    type: kubernetes:core/v1:Secret\n'))).resolves.toBeUndefined();
    await expect(inspect(project('resources:\n  c:\n    type: command:local:Command\n', '{ name: yaml, options: {} }'))).resolves.toBeUndefined();
  });

  it('names the provider of an explicit provider resource, an invoke, a short invoke, a package and Main.yaml', async () => {
    const refused = (at: string, pkg: string) =>
      new RegExp(`repo@abc:envs/x: ${at}.* uses provider "${pkg}", which the operator does not allow \\(allowed: kubernetes, command, docker\\)`);
    await expect(inspect(project('resources:\n  p:\n    type: pulumi:providers:aws\n'))).rejects.toThrow(
      refused('resources.p.type "pulumi:providers:aws"', 'aws'),
    );
    await expect(inspect(project('variables:\n  ami:\n    fn::invoke:\n      function: aws:ec2:getAmi\n'))).rejects.toThrow(
      refused('variables.ami.fn::invoke.function "aws:ec2:getAmi"', 'aws'),
    );
    await expect(inspect(project('variables:\n  ami:\n    fn::gcp:compute:getImage: {}\n'))).rejects.toThrow(
      refused('variables.ami.fn::gcp:compute:getImage', 'gcp'),
    );
    await expect(inspect(project('packages:\n  random: random@4.0.0\n'))).rejects.toThrow(refused('packages.random', 'random'));
    await expect(inspect({ ...project(''), 'Main.yaml': 'resources:\n  b:\n    type: aws:s3:Bucket\n' })).rejects.toThrow(
      refused('Main.yaml: resources.b.type', 'aws'),
    );
  });

  it('refuses an allowed provider that is not installed, Pulumi types, and a main or plugins of its own', async () => {
    await expect(inspect(project('resources:\n  d:\n    type: docker:index:Container\n'))).rejects.toThrow(
      'uses provider "docker", which is allowed but not installed on this control plane; ask the operator to install its plugin',
    );
    await expect(inspect(project('resources:\n  r:\n    type: pulumi:pulumi:StackReference\n'))).rejects.toThrow(
      /uses a built-in Pulumi type that reads other stacks/,
    );
    await expect(inspect(project('main: other/\n'))).rejects.toThrow('repo@abc:envs/x/Pulumi.yaml: "main" is not allowed');
    await expect(inspect(project('plugins:\n  providers: [{ name: x, path: ./bin }]\n'))).rejects.toThrow('"plugins" is not allowed');
  });

  it('says what is wrong with the file itself', async () => {
    await expect(inspect({})).rejects.toThrow('repo@abc:envs/x/Pulumi.yaml does not exist');
    await expect(inspect({ 'Pulumi.yaml': 'name: x\nruntime: yaml\nresources: {a: [\n' })).rejects.toThrow(
      /Pulumi\.yaml is not valid YAML \(line \d+, column \d+\)/,
    );
    await expect(inspect({ 'Pulumi.yaml': '- a list\n' })).rejects.toThrow('is not a YAML mapping');
    await expect(inspect(project('', 'python'))).rejects.toThrow(
      new ProgramProblem('repo@abc:envs/x/Pulumi.yaml: runtime is "python"; agentplane runs Pulumi YAML programs only: set "runtime: yaml"'),
    );
    await expect(inspect(project('resources:\n  s:\n    properties: {}\n'))).rejects.toThrow('resources.s: has no "type"');
  });
});
