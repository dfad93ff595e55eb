import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as pulumi from '@pulumi/pulumi';
import { parse } from 'yaml';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/** Test values for the secrets every stack file says to set with `pulumi config set --secret`. */
export const TEST_SECRETS = {
  pulumiPassphrase: 'test-passphrase-0123456789',
  postgresPassword: 'pg/pass:word@0123456789',
  jwtSecret: 'j'.repeat(40),
  databaseUrl: 'postgresql://agentplane:secret@db.internal:5432/agentplane',
};

/** A stack file's `agentplane:*` config as the CLI hands it to the program: scalars as strings, objects as JSON. */
export function stackConfig(stack: string): Record<string, string> {
  const file = path.join(REPO_ROOT, 'stacks', `Pulumi.${stack}.yaml`);
  const doc = parse(readFileSync(file, 'utf8')) as { config: Record<string, unknown> };
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(doc.config)) out[k] = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return out;
}

export interface Registered {
  type: string;
  name: string;
  urn: string;
  inputs: Record<string, any>;
  /** URNs this resource waits for (dependsOn, and resources its inputs came from). */
  dependencies: string[];
  parent: string;
}

/**
 * Runs `fn` under Pulumi's mocks and returns every resource registered, with the dependency URNs
 * the engine would have seen (read from the register request, which the mocks API hides).
 */
export async function underMocks<T>(config: Record<string, string>, secretKeys: string[], fn: () => T): Promise<{ resources: Registered[]; result: T }> {
  const resources: Registered[] = [];
  const inputs = new Map<string, Record<string, any>>();
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        inputs.set(`${args.type}::${args.name}`, args.inputs);
        const metadata = args.inputs.metadata ?? {};
        // Like the real provider: auto-named resources get a random suffix.
        const state = { ...args.inputs, metadata: { ...metadata, name: metadata.name ?? `${args.name}-x1y2z3` } };
        return { id: `${args.name}-id`, state };
      },
      call: (args) => args.inputs,
    },
    'agentplane',
    'test',
    false,
  );
  const monitor = pulumi.runtime.getMonitor() as any;
  const register = monitor.registerResource.bind(monitor);
  monitor.registerResource = (req: any, callback: (err: unknown, res: any) => void) =>
    register(req, (err: unknown, res: any) => {
      if (!err) {
        resources.push({
          type: req.getType(),
          name: req.getName(),
          urn: res.getUrn(),
          inputs: {},
          dependencies: req.getDependenciesList(),
          parent: req.getParent(),
        });
      }
      callback(err, res);
    });
  pulumi.runtime.setAllConfig(config, secretKeys);
  const result = fn();
  // Registrations run on later turns of the event loop; wait until no more arrive.
  await waitForIdle(resources);
  for (const r of resources) r.inputs = inputs.get(`${r.type}::${r.name}`) ?? {};
  return { resources, result };
}

async function waitForIdle(resources: Registered[]): Promise<void> {
  let last = -1;
  for (let stable = 0; stable < 5; ) {
    await new Promise((r) => setTimeout(r, 10));
    if (resources.length === last) stable++;
    else {
      stable = 0;
      last = resources.length;
    }
  }
}

export function byType(resources: Registered[], type: string): Registered[] {
  return resources.filter((r) => r.type === type);
}

/** The one resource of a type, optionally with this Kubernetes name (or, when auto-named, this Pulumi name). */
export function one(resources: Registered[], type: string, name?: string): Registered {
  const named = (r: Registered) => (r.inputs.metadata?.name ?? r.name) === name;
  const found = resources.filter((r) => r.type === type && (name === undefined || named(r)));
  if (found.length !== 1) throw new Error(`expected one ${type}${name ? ` named ${name}` : ''}, found ${found.length}`);
  return found[0]!;
}

const SECRET_SIG = '4dabf18193072939515e22adb298388d';

/** The value of a secret input as the mocks see it; fails when the input is not marked secret. */
export function secretValue(v: unknown): any {
  const o = v as Record<string, unknown> | undefined;
  if (!o || o[SECRET_SIG] !== '1b47061264138c4ac30d75fd1eb44270') throw new Error(`not a secret: ${JSON.stringify(v)}`);
  return o.value;
}
