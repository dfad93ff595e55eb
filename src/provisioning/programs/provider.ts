import type { PulumiToolchain } from '../pulumi/toolchain.ts';
import type { ManagedProvider } from '../providers/types.ts';
import { missingProgramPrerequisites } from './settings.ts';

/** The provider type of computers made from templates' Pulumi YAML programs. */
export const PROGRAM_PROVIDER = 'program';

/**
 * `program`: available when the toolchain holds the YAML language host and an allowed provider's
 * plugin. It has no program of its own: each computer runs its template version's program.
 */
export function createProgramProvider(toolchain: PulumiToolchain, allowed: string[]): ManagedProvider {
  return {
    name: PROGRAM_PROVIDER,
    missingPrerequisites: async () => missingProgramPrerequisites(toolchain, allowed),
    program: () => {
      throw new Error("a program computer runs its template version's program, not a built-in one");
    },
  };
}
