import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import type { EngineEvent, LocalWorkspaceOptions, OutputMap, PulumiCommand, Stack } from '@pulumi/pulumi/automation/index.js';
import YAML from 'yaml';
import type { Logger } from '../../lib/logger.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import type { PreviewedObject, ProgramConfig, ProgramEndpoint } from '../programs/contract.ts';
import { endpointFromOutputs } from '../programs/outputs.ts';
import { builtinInputFromStackConfig, stackConfigValues } from '../programs/stack-config.ts';
import type { StackProgram } from '../programs/stack-program.ts';
import { engineEnv, pulumiCommand } from './engine-env.ts';
import { createOperationGate } from './operation-gate.ts';
import { repairInterruptedWrites } from './file-backend-repair.ts';
import { lockHolderRuns, lockHoldersIn, type LockHolder } from './lock-holder.ts';
import { KEEPER_SECRETS_PROVIDER, startStackKeeper, type StackKeeper } from './stack-keeper.ts';
import type { PulumiStateSettings } from './state-settings.ts';
import type { PulumiToolchain } from './toolchain.ts';

/** Every computer's stack belongs to this project; the stack is named after the computer id. */
export const COMPUTERS_PROJECT = 'agentplane-computers';

/** The stack configuration of one operation; `apiUrl` defaults to the control plane's own (ComputerStacksOptions.apiUrl). */
export type StackConfig = Omit<ProgramConfig, 'apiUrl'> & { apiUrl?: string };

interface StackRunOptions {
  signal?: AbortSignal;
  log: Logger;
  /** The stack was never created (a first provisioning): create it without trying to select it first. */
  fresh?: boolean;
}

export interface ComputerStacks {
  /**
   * `pulumi up` of the computer's stack (named after `config.computerId`) with its `agentplane:*`
   * configuration set first; creates the stack on first use. Idempotent. Outputs that miss the
   * contract fail it with a ProgramProblem (what was created stays in the stack for `destroy`).
   */
  up(program: StackProgram, config: StackConfig, opts: StackRunOptions): Promise<ProgramEndpoint>;
  /** `pulumi destroy`, then the stack and its workspace directory are removed. Idempotent. */
  destroy(program: StackProgram, config: StackConfig, opts: StackRunOptions): Promise<void>;
  /**
   * `pulumi preview` of the program against a scratch stack (removed after): the objects it would
   * create, or Pulumi's error.
   */
  preview(program: StackProgram, config: StackConfig, opts: StackRunOptions): Promise<{ ok: true; creates: PreviewedObject[] } | { ok: false; error: string }>;
  /** Runs `fn` while no stack operation of this process runs (new ones wait): the state is at rest. */
  whileIdle<T>(fn: () => Promise<T>): Promise<T>;
}

/** A Pulumi operation that failed; `message` holds the engine's error diagnostics. */
class StackOperationFailed extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StackOperationFailed';
  }
}

export interface ComputerStacksOptions extends PulumiStateSettings {
  /** One LocalWorkspace directory per computer lives here. */
  workspacesDir: string;
  toolchain: PulumiToolchain;
  /**
   * Wraps the data key of each stack created from now on (see startStackKeeper). Stacks created
   * with the passphrase keep it: their settings file names it, and the passphrase stays set.
   */
  stackKeys: Pick<SecretBox, 'seal' | 'open'>;
  /** The control plane's base URL as computers reach it (`agentplane:apiUrl` unless an operation gives one). */
  apiUrl?: () => string;
}

// A stack whose lock is held by a live process on this machine (e.g. a CLI orphaned by a killed
// control plane, still finishing) is waited for this long before the operation gives up.
const LIVE_LOCK_WAIT_MS = 120_000;

/**
 * One Pulumi stack per computer, each in its own LocalWorkspace directory, running the
 * provider's inline program. Callers run one operation per computer at a time (the stack job is
 * serialized by computer id); a lock left by a killed run is therefore stale and is cleared.
 */
export function createComputerStacks(opts: ComputerStacksOptions): ComputerStacks {
  let command: Promise<PulumiCommand> | undefined;
  let keeper: Promise<StackKeeper> | undefined;
  const envVars = engineEnv({ backendUrl: opts.backendUrl, passphrase: opts.passphrase, toolchain: opts.toolchain });

  // A file:// backend is a directory, which Pulumi expects to exist. Made on the first stack
  // operation, as the CLI is found then: processes that run no stack make nothing.
  const stateDir = opts.backendUrl.startsWith('file://') ? fileURLToPath(opts.backendUrl) : undefined;
  let stateDirMade: Promise<unknown> | undefined;

  async function open(program: StackProgram, stackName: string, log: Logger, fresh = false): Promise<Stack> {
    const workDir = path.join(opts.workspacesDir, stackName);
    if (stateDir) stateDirMade ??= mkdir(stateDir, { recursive: true });
    await Promise.all([mkdir(workDir, { recursive: true }), stateDirMade]);
    if (stateDir) {
      const repaired = await repairInterruptedWrites(stateDir, COMPUTERS_PROJECT, stackName);
      if (repaired.length) log.warn({ stack: stackName, files: repaired }, 'removed metadata files a killed Pulumi run left broken');
    }
    command ??= pulumiCommand(opts.toolchain);
    keeper ??= startStackKeeper(opts.stackKeys);
    const backend = { url: opts.backendUrl };
    const wsOpts: LocalWorkspaceOptions = {
      workDir,
      pulumiCommand: await command,
      envVars: { ...envVars, ...(await keeper).env },
      // Only `stack init` reads it: an existing stack keeps the provider its settings file names.
      secretsProvider: KEEPER_SECRETS_PROVIDER,
      // A YAML program runs in place from its checked-out directory (`main`, relative: Pulumi joins
      // it to the work directory), under the computers' project whatever name its Pulumi.yaml gives.
      projectSettings:
        program.kind === 'yaml'
          ? { name: COMPUTERS_PROJECT, runtime: { name: 'yaml' }, main: path.relative(workDir, program.dir) || '.', backend }
          : { name: COMPUTERS_PROJECT, runtime: 'nodejs', backend },
    };
    // Loaded on first use, as pulumiCommand is: only processes that run stacks pay for the import.
    const { LocalWorkspace, StackAlreadyExistsError, StackNotFoundError } = await import('@pulumi/pulumi/automation/index.js');
    const builtin = program.kind === 'builtin' ? program.program : undefined;
    const create = (how: 'createStack' | 'selectStack') =>
      builtin
        ? LocalWorkspace[how]({ projectName: COMPUTERS_PROJECT, stackName, program: async () => builtin(await builtinInputFromStackConfig()) as never }, wsOpts)
        : LocalWorkspace[how]({ stackName, workDir }, wsOpts);
    // Each CLI run costs a process and a state read, so the likely case goes first.
    const [first, second] = fresh ? (['createStack', 'selectStack'] as const) : (['selectStack', 'createStack'] as const);
    try {
      return await create(first);
    } catch (err) {
      if (!(err instanceof StackAlreadyExistsError || err instanceof StackNotFoundError)) throw err;
      return create(second);
    }
  }

  /**
   * Sets the stack's `agentplane:*` configuration. The plain values go straight into the stack's
   * settings file (what `pulumi config set` writes, without a CLI run each), written whole and
   * renamed into place so a kill never cuts it short; the registration token through the CLI, as
   * a secret of the stack's own secrets provider.
   */
  async function configure(stack: Stack, config: StackConfig) {
    const { plain, secret } = stackConfigValues({ ...config, apiUrl: config.apiUrl ?? opts.apiUrl?.() ?? '' });
    const file = path.join(stack.workspace.workDir, `Pulumi.${stack.name}.yaml`);
    const settings = ((await readFile(file, 'utf8').then(YAML.parse, () => undefined)) ?? {}) as { config?: Record<string, unknown> };
    settings.config = { ...settings.config, ...plain };
    const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(tmp, YAML.stringify(settings));
    await rename(tmp, file);
    for (const [key, value] of Object.entries(secret)) await stack.setConfig(key, { value, secret: true });
  }

  /**
   * `pulumi up`, with the outputs taken from its own engine events. Stack.up would read them
   * afterwards with two more CLI runs and a history read, each opening the stack's secrets manager.
   */
  async function up(stack: Stack, runOpts: StackRunOptions): Promise<OutputMap> {
    let outputs: OutputMap | undefined;
    const readOutputs = stack.outputs.bind(stack);
    stack.outputs = async () => outputs ?? readOutputs();
    stack.info = async () => undefined;
    const result = await run(stack, runOpts, (onEvent) =>
      stack.up({
        signal: runOpts.signal,
        color: 'never',
        onEvent: (e) => {
          onEvent(e);
          const m = e.resOutputsEvent?.metadata;
          // Secret outputs come masked in events: those are read from the stack instead.
          if (m?.type === 'pulumi:pulumi:Stack' && m.new?.outputs && !JSON.stringify(m.new.outputs).includes('[secret]')) {
            outputs = Object.fromEntries(Object.entries(m.new.outputs).map(([k, value]) => [k, { value, secret: false }]));
          }
        },
      }),
    );
    return result.outputs;
  }

  /** Runs `operation`, collecting the engine's error diagnostics for a readable failure. */
  async function run<T>(stack: Stack, run: StackRunOptions, operation: (onEvent: (e: EngineEvent) => void) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const errors: string[] = [];
      const onEvent = (e: EngineEvent) => {
        const d = e.diagnosticEvent;
        if (d && d.severity === 'error' && !d.ephemeral) errors.push(d.message.trim());
      };
      try {
        return await operation(onEvent);
      } catch (err) {
        const text = err instanceof Error ? err.message : String(err);
        const holders = lockHoldersIn(text);
        if (holders.length > 0 && attempt < 100) {
          await clearLock(stack, run, holders);
          continue;
        }
        if (run.signal?.aborted) throw run.signal.reason;
        const detail = errors.filter((m) => !/^update failed$/i.test(m)).join('; ') || lastLines(text);
        throw new StackOperationFailed(detail, { cause: err });
      }
    }
  }

  async function clearLock(stack: Stack, run: StackRunOptions, holders: LockHolder[]) {
    const deadline = Date.now() + LIVE_LOCK_WAIT_MS;
    for (;;) {
      const live = (await Promise.all(holders.map(async (h) => ((await lockHolderRuns(h)) ? [h] : [])))).flat();
      if (live.length === 0) break;
      const pids = live.map((h) => h.pid).join(', ');
      if (Date.now() > deadline) throw new StackOperationFailed(`stack ${stack.name} is still locked by pid ${pids} on this machine`);
      run.log.info({ stack: stack.name, pids }, 'waiting for the process holding the stack lock');
      await delay(1_000, undefined, { signal: run.signal });
    }
    run.log.warn({ stack: stack.name, holders }, 'clearing a stale stack lock');
    await stack.cancel();
  }

  async function removeStack(stack: Stack) {
    await stack.workspace.removeStack(stack.name);
    await rm(stack.workspace.workDir, { recursive: true, force: true });
  }

  const gate = createOperationGate();
  return {
    up: (program, config, runOpts) =>
      gate.run(async () => {
        const stack = await open(program, config.computerId, runOpts.log, runOpts.fresh);
        await configure(stack, config);
        const outputs = await up(stack, runOpts);
        return endpointFromOutputs(Object.fromEntries(Object.entries(outputs).map(([k, o]) => [k, o.value as unknown])), program.name);
      }),

    destroy: (program, config, runOpts) =>
      gate.run(async () => {
        const stack = await open(program, config.computerId, runOpts.log);
        await configure(stack, config);
        // A run killed mid-create leaves "pending creates" that destroy would forget: bring the
        // stack up first, which adopts them (programs' creates are idempotent), then tear it down.
        const state = await stack.exportStack();
        const pending = (state.deployment as { pending_operations?: unknown[] } | undefined)?.pending_operations ?? [];
        if (pending.length > 0) {
          runOpts.log.warn({ stack: config.computerId, pending: pending.length }, 'adopting interrupted operations before destroy');
          await up(stack, runOpts);
        }
        stack.info = async () => undefined;
        await run(stack, runOpts, (onEvent) => stack.destroy({ signal: runOpts.signal, onEvent, color: 'never' }));
        await removeStack(stack);
      }),

    preview: (program, config, runOpts) =>
      gate.run(async () => {
        const stack = await open(program, `preview-${randomBytes(6).toString('hex')}`, runOpts.log, true);
        try {
          await configure(stack, config);
          const creates: PreviewedObject[] = [];
          await run(stack, runOpts, (onEvent) =>
            stack.preview({
              signal: runOpts.signal,
              color: 'never',
              onEvent: (e) => {
                onEvent(e);
                const m = e.resourcePreEvent?.metadata;
                if (m?.op === 'create' && !m.type.startsWith('pulumi:')) {
                  creates.push({ type: m.type, name: m.urn.split('::').pop() ?? m.urn });
                }
              },
            }),
          );
          return { ok: true as const, creates };
        } catch (err) {
          if (!(err instanceof StackOperationFailed)) throw err;
          return { ok: false as const, error: err.message };
        } finally {
          await removeStack(stack).catch((err: unknown) => runOpts.log.warn({ err, stack: stack.name }, 'removing a preview stack failed'));
        }
      }),

    whileIdle: (fn) => gate.whileIdle(fn),
  };
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-5).join('\n');
}
