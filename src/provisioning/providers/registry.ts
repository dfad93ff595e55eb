import type { ManagedProvider } from './types.ts';

/** One managed provider as this deployment sees it now. */
interface ProviderStatus {
  name: string;
  available: boolean;
  /** Each missing prerequisite with what provides it; empty when available. */
  missing: string[];
}

export interface ProviderRegistry {
  /** Names of the providers usable right now. */
  available(): Promise<string[]>;
  /** Every provider agentplane knows, usable or not, with what is missing (start-up log, `includeUnavailable`). */
  status(): Promise<ProviderStatus[]>;
  get(name: string): ManagedProvider | undefined;
}

/**
 * `disabled`: providers the configuration turned off, with the setting that did, so a newcomer
 * who asks why one is missing is told.
 */
export function createProviderRegistry(providers: ManagedProvider[], disabled: Record<string, string> = {}): ProviderRegistry {
  const byName = new Map(providers.map((p) => [p.name, p]));
  const status = async (): Promise<ProviderStatus[]> => {
    const checked = await Promise.all(
      providers.map(async (p) => {
        const missing = await p.missingPrerequisites();
        return { name: p.name, available: missing.length === 0, missing };
      }),
    );
    const off = Object.entries(disabled).map(([name, setting]) => ({ name, available: false, missing: [`disabled by ${setting}`] }));
    return [...checked, ...off].sort((a, b) => a.name.localeCompare(b.name));
  };
  return {
    available: async () => (await status()).filter((s) => s.available).map((s) => s.name),
    status,
    get: (name) => byName.get(name),
  };
}
