import { BadRequest } from '../../lib/errors.ts';
import type { ProviderRegistry } from '../../provisioning/providers/registry.ts';
import type { ManagedProvider } from '../../provisioning/providers/types.ts';
import { BYOM } from './machines.ts';
import { PROGRAM_PROVIDER } from './program-template.ts';

/**
 * The managed provider a create request names, if it is usable here; 400 listing the choices
 * otherwise. `program` is one only through a program template (source.ts), never by name.
 */
export async function usableProvider(providers: ProviderRegistry, name: string | undefined): Promise<ManagedProvider> {
  if (name === PROGRAM_PROVIDER) {
    throw new BadRequest(
      `provider ${PROGRAM_PROVIDER} makes computers of a program template at its current version: name the template in source ({kind: "template", templateId})`,
    );
  }
  const available = await providers.available();
  const provider = name === undefined ? undefined : providers.get(name);
  if (provider && available.includes(provider.name)) return provider;
  const choices = [BYOM, ...available].join(', ');
  throw new BadRequest(
    name === undefined
      ? `provider is required: one of ${choices} (byom also needs connection)`
      : `Provider "${name}" is not available on this deployment; available: ${choices}`,
  );
}
