/** A managed compute provider (one Pulumi program each); byom is not one of them. */
export interface ManagedProvider {
  /** The identifier clients send as `provider`, e.g. `local` or `kubernetes`. */
  readonly name: string;
  /** Whether this deployment can provision with it right now (prerequisites present). */
  isAvailable(): Promise<boolean>;
}

export interface ProviderRegistry {
  available(): Promise<string[]>;
  get(name: string): ManagedProvider | undefined;
}

export function createProviderRegistry(providers: ManagedProvider[]): ProviderRegistry {
  const byName = new Map(providers.map((p) => [p.name, p]));
  return {
    available: async () => {
      const checks = await Promise.all(providers.map(async (p) => ((await p.isAvailable()) ? p.name : undefined)));
      return checks.filter((n): n is string => n !== undefined);
    },
    get: (name) => byName.get(name),
  };
}
