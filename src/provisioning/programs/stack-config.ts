import type { ComputerProgramInput } from '../providers/types.ts';
import type { ProgramConfig } from './contract.ts';

/** The stack configuration's namespace: `agentplane:computerId`, ... */
const CONFIG_NAMESPACE = 'agentplane';

const PLAIN_KEYS = ['computerId', 'name', 'organizationId', 'authorizedKey', 'cpu', 'memoryMb', 'diskGb', 'apiUrl', 'running'] as const;

/** The stack's `agentplane:*` configuration, all strings; the registration token apart, as it is set as a secret. */
export function stackConfigValues(config: ProgramConfig): { plain: Record<string, string>; secret: Record<string, string> } {
  const plain = Object.fromEntries(PLAIN_KEYS.map((k) => [`${CONFIG_NAMESPACE}:${k}`, String(config[k])]));
  const secret: Record<string, string> = config.registrationToken ? { [`${CONFIG_NAMESPACE}:registrationToken`]: config.registrationToken } : {};
  return { plain, secret };
}

/**
 * The built-in programs' input, read from the stack's configuration inside `pulumi up` (Pulumi's
 * runtime is running then): the same `agentplane:*` keys a YAML program reads.
 */
export async function builtinInputFromStackConfig(): Promise<ComputerProgramInput> {
  const { Config } = await import('@pulumi/pulumi');
  const c = new Config(CONFIG_NAMESPACE);
  return {
    computerId: c.require('computerId'),
    name: c.require('name'),
    organizationId: c.require('organizationId'),
    authorizedPublicKey: c.require('authorizedKey'),
    resources: { cpus: c.requireNumber('cpu'), memoryMiB: c.requireNumber('memoryMb'), diskGiB: c.requireNumber('diskGb') },
    running: c.requireBoolean('running'),
  };
}
