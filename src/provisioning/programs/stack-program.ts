import type { ComputerProgram } from '../providers/types.ts';
import type { ProgramSource } from './contract.ts';
import type { PROGRAM_PROVIDER } from './provider.ts';

/**
 * What a computer's stack runs, both kinds behind one contract (contract.ts): a built-in
 * provider's inline program, or a template's Pulumi YAML program checked out at a commit.
 */
export type StackProgram =
  | {
      kind: 'builtin';
      /** The provider's name (`local`, `kubernetes`), for messages and metrics. */
      name: string;
      program: ComputerProgram;
    }
  | {
      kind: 'yaml';
      /** `program`: the provider type of computers made from templates' programs (a metrics label). */
      name: typeof PROGRAM_PROVIDER;
      source: ProgramSource;
      commit: string;
      /** The checked-out directory holding `Pulumi.yaml` (read-only: shared by every stack of the commit). */
      dir: string;
    };
