import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { isMap, parseDocument } from 'yaml';
import type { PulumiToolchain } from '../pulumi/toolchain.ts';
import { ProgramProblem } from './problem.ts';
import { pluginInstalled } from './settings.ts';

/** Where a program's tokens were found, for messages: `resources.key.type`, `variables.ami.fn::invoke.function`. */
interface TokenUse {
  pkg: string;
  at: string;
}

export interface InspectOptions {
  /** AGENTPLANE_PROGRAM_PROVIDERS: the packages a program may use. */
  allowed: string[];
  toolchain: PulumiToolchain;
}

/**
 * Checks a checked-out program before Pulumi runs it: `Pulumi.yaml` in `dir` (named `where` in
 * messages), valid YAML, `runtime: yaml`, no plugin or `main` of its own, and every package it
 * uses (resource types, explicit providers, invoked functions, declared packages) allowed by the
 * operator and installed in the toolchain. Throws a ProgramProblem naming the file, key or
 * provider and what to do.
 */
export async function inspectProgram(dir: string, where: string, opts: InspectOptions): Promise<void> {
  const project = await readYaml(path.join(dir, 'Pulumi.yaml'), `${where}/Pulumi.yaml`, true);
  const runtime = project.runtime;
  const runtimeName = typeof runtime === 'object' && runtime !== null ? (runtime as { name?: unknown }).name : runtime;
  if (runtimeName !== 'yaml') {
    throw new ProgramProblem(
      `${where}/Pulumi.yaml: runtime is ${JSON.stringify(runtimeName ?? null)}; agentplane runs Pulumi YAML programs only: set "runtime: yaml"`,
    );
  }
  for (const key of ['main', 'plugins'] as const) {
    if (project[key] !== undefined) {
      throw new ProgramProblem(
        `${where}/Pulumi.yaml: "${key}" is not allowed: agentplane runs the program in place from this directory with the operator's plugins only; remove "${key}"`,
      );
    }
  }
  const uses = tokensOf(project, '');
  // Pulumi YAML reads the program from Main.yaml instead when the project file has none.
  const main = await readYaml(path.join(dir, 'Main.yaml'), `${where}/Main.yaml`, false);
  if (main) uses.push(...tokensOf(main, 'Main.yaml: '));
  for (const use of uses) {
    if (use.pkg === 'pulumi') {
      throw new ProgramProblem(
        `${where}: ${use.at} uses a built-in Pulumi type that reads other stacks or the engine; a program may use providers' types only`,
      );
    }
    if (!opts.allowed.includes(use.pkg)) {
      throw new ProgramProblem(
        `${where}: ${use.at} uses provider "${use.pkg}", which the operator does not allow (allowed: ${opts.allowed.join(', ')}); ` +
          `use an allowed provider, or ask the operator to install it and add it to AGENTPLANE_PROGRAM_PROVIDERS`,
      );
    }
    if (!pluginInstalled(opts.toolchain, use.pkg)) {
      throw new ProgramProblem(
        `${where}: ${use.at} uses provider "${use.pkg}", which is allowed but not installed on this control plane; ask the operator to install its plugin (scripts/pulumi-toolchain.sh)`,
      );
    }
  }
}

async function readYaml(file: string, name: string, required: true): Promise<Record<string, unknown>>;
async function readYaml(file: string, name: string, required: false): Promise<Record<string, unknown> | undefined>;
async function readYaml(file: string, name: string, required: boolean): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    if (!required) return undefined;
    throw new ProgramProblem(
      `${name} does not exist: the program's path must name a directory holding a Pulumi YAML project (Pulumi.yaml with "runtime: yaml")`,
    );
  }
  const doc = parseDocument(text);
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = e.linePos?.[0] ? ` (line ${e.linePos[0].line}, column ${e.linePos[0].col})` : '';
    throw new ProgramProblem(`${name} is not valid YAML${line}: ${e.message.split('\n')[0]}`);
  }
  if (!isMap(doc.contents)) throw new ProgramProblem(`${name} is not a YAML mapping: it must hold keys such as name, runtime and resources`);
  return doc.toJS() as Record<string, unknown>;
}

/** Every package a program document uses: resource types, provider resources, invoked functions, declared packages. */
function tokensOf(doc: Record<string, unknown>, prefix: string): TokenUse[] {
  const uses: TokenUse[] = [];
  const resources = doc.resources;
  if (resources && typeof resources === 'object') {
    for (const [name, res] of Object.entries(resources as Record<string, unknown>)) {
      const type = (res as { type?: unknown } | null)?.type;
      if (typeof type !== 'string') throw new ProgramProblem(`${prefix}resources.${name}: has no "type" (e.g. kubernetes:core/v1:Secret)`);
      uses.push({ pkg: packageOf(type), at: `${prefix}resources.${name}.type "${type}"` });
    }
  }
  const packages = doc.packages;
  if (packages && typeof packages === 'object') {
    for (const name of Object.keys(packages as Record<string, unknown>)) uses.push({ pkg: name, at: `${prefix}packages.${name}` });
  }
  walk(doc, prefix.replace(/: $/, ''), (at, key, value) => {
    if (key === 'fn::invoke') {
      const fn = (value as { function?: unknown } | null)?.function;
      if (typeof fn === 'string') uses.push({ pkg: packageOf(fn), at: `${at}.fn::invoke.function "${fn}"` });
    } else if (/^fn::[A-Za-z0-9-]+:/.test(key)) {
      // The short form of an invoke: `fn::aws:ec2:getAmi: {...}`.
      const fn = key.slice(4);
      uses.push({ pkg: packageOf(fn), at: `${at}.${key}` });
    }
  });
  return uses;
}

/** `kubernetes:core/v1:Secret` → kubernetes; `pulumi:providers:kubernetes` → kubernetes; `pulumi:pulumi:StackReference` → pulumi. */
function packageOf(token: string): string {
  const parts = token.split(':');
  if (parts[0] === 'pulumi' && parts[1] === 'providers' && parts[2]) return parts[2];
  return parts[0] ?? token;
}

function walk(node: unknown, at: string, visit: (at: string, key: string, value: unknown) => void) {
  if (Array.isArray(node)) {
    node.forEach((item, i) => walk(item, `${at}[${i}]`, visit));
  } else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      visit(at || key, key, value);
      walk(value, at ? `${at}.${key}` : key, visit);
    }
  }
}
