import { pino } from 'pino';
import type { Logger } from '../../lib/logger.ts';
import type { ComputerStacks } from '../pulumi/computer-stacks.ts';
import type { PulumiToolchain } from '../pulumi/toolchain.ts';
import { checkout, resolveRef, shown, type PinRepository } from './checkout.ts';
import type { PreviewedObject, ProgramSource } from './contract.ts';
import { inspectProgram } from './inspect.ts';
import { ProgramProblem } from './problem.ts';
import { PROGRAM_PROVIDER } from './provider.ts';
import type { StackProgram } from './stack-program.ts';

/** Templates' Pulumi YAML programs: refs resolved to commits, commits checked out, inspected and previewed. */
export interface ProgramEngine {
  /** The ref's commit (40 hex); a ProgramProblem when the repository or ref does not exist or cannot be reached. */
  resolve(organizationId: string, source: ProgramSource, signal: AbortSignal): Promise<string>;
  /**
   * The commit checked out (cached), inspected, and `pulumi preview`ed against a scratch stack with
   * placeholder `agentplane:*` configuration: the objects it would create, or why it cannot run.
   */
  preview(
    organizationId: string,
    source: ProgramSource,
    commit: string,
    signal: AbortSignal,
    log?: Logger,
  ): Promise<{ ok: true; creates: PreviewedObject[] } | { ok: false; error: string }>;
  /**
   * The checked-out, inspected program at `commit`, for `stacks.up`/`destroy`. `inspect: false`
   * (a teardown) skips the allow list: a provider the operator stopped allowing since still
   * destroys what it made.
   */
  stackProgram(organizationId: string, source: ProgramSource, commit: string, signal: AbortSignal, opts?: { inspect?: boolean }): Promise<StackProgram>;
}

export interface ProgramEngineOptions {
  /** `<data dir>/programs`: checkouts by commit, and scratch clones. */
  dir: string;
  /** Undefined where this process reaches no repository (no egress guard given). */
  pin?: PinRepository;
  toolchain: PulumiToolchain;
  /** AGENTPLANE_PROGRAM_PROVIDERS. */
  allowedProviders: string[];
  stacks: Pick<ComputerStacks, 'preview'>;
}

// Only the preview's shape matters: a key the program can install, sizes the built-ins default to.
const PLACEHOLDER_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILP+nlz4NEJnwe2Lznp2bdzz1RNOBvOc+Wbp1S7lMWuH agentplane-preview';

export function createProgramEngine(opts: ProgramEngineOptions): ProgramEngine {
  const checkoutOptions = () => {
    if (!opts.pin) throw new ProgramProblem('this process reaches no program repositories (it was started without the egress guard)');
    return { cacheDir: `${opts.dir}/checkouts`, scratchDir: `${opts.dir}/scratch`, pin: opts.pin };
  };
  const silent = pino({ level: 'silent' });

  async function stackProgram(
    organizationId: string,
    source: ProgramSource,
    commit: string,
    signal: AbortSignal,
    use: { inspect?: boolean } = {},
  ): Promise<StackProgram> {
    const dir = await checkout(checkoutOptions(), organizationId, source, commit, signal);
    const where = `${shown(source)}@${commit.slice(0, 12)}:${source.path || '.'}`;
    if (use.inspect !== false) await inspectProgram(dir, where, { allowed: opts.allowedProviders, toolchain: opts.toolchain });
    return { kind: 'yaml', name: PROGRAM_PROVIDER, source, commit, dir };
  }

  return {
    resolve: (organizationId, source, signal) => resolveRef(checkoutOptions(), organizationId, source, signal),
    stackProgram,
    async preview(organizationId, source, commit, signal, log = silent) {
      let program: StackProgram;
      try {
        program = await stackProgram(organizationId, source, commit, signal);
      } catch (err) {
        if (err instanceof ProgramProblem) return { ok: false, error: err.message };
        throw err;
      }
      return opts.stacks.preview(
        program,
        {
          computerId: 'cmp_preview0000000000000',
          name: 'preview',
          organizationId,
          authorizedKey: PLACEHOLDER_KEY,
          cpu: 1,
          memoryMb: 2048,
          diskGb: 10,
          running: true,
          registrationToken: 'apreg_preview',
        },
        { signal, log },
      );
    },
  };
}
