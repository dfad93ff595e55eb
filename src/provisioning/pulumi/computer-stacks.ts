import { mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import type { EngineEvent, OutputMap, PulumiCommand, Stack } from '@pulumi/pulumi/automation/index.js';
import type { Logger } from '../../lib/logger.ts';
import type { SecretBox } from '../../lib/secret-box.ts';
import type { ComputerProgramInput, ManagedProvider } from '../providers/types.ts';
import { engineEnv, pulumiCommand } from './engine-env.ts';
import { createOperationGate } from './operation-gate.ts';
import { repairInterruptedWrites } from './file-backend-repair.ts';
import { KEEPER_SECRETS_PROVIDER, startStackKeeper, type StackKeeper } from './stack-keeper.ts';
import type { PulumiStateSettings } from './state-settings.ts';
import type { PulumiToolchain } from './toolchain.ts';
import { processAlive } from '../../lib/process-alive.ts';

/** Every computer's stack belongs to this project; the stack is named after the computer id. */
export const COMPUTERS_PROJECT = 'agentplane-computers';

/** How the control plane reaches a computer: its stack's outputs. */
interface ComputerEndpoint {
  host: string;
  port: number;
  username: string;
  hostPublicKey: string;
}

interface StackRunOptions {
  signal?: AbortSignal;
  log: Logger;
  /** The stack was never created (a first provisioning): create it without trying to select it first. */
  fresh?: boolean;
}

export interface ComputerStacks {
  /** `pulumi up` of the computer's stack; creates the stack on first use. Idempotent. */
  up(provider: ManagedProvider, input: ComputerProgramInput, opts: StackRunOptions): Promise<ComputerEndpoint>;
  /** `pulumi destroy`, then the stack and its workspace directory are removed. Idempotent. */
  destroy(provider: ManagedProvider, input: ComputerProgramInput, opts: StackRunOptions): Promise<void>;
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

  async function open(provider: ManagedProvider, input: ComputerProgramInput, log: Logger, fresh = false): Promise<Stack> {
    const workDir = path.join(opts.workspacesDir, input.computerId);
    if (stateDir) stateDirMade ??= mkdir(stateDir, { recursive: true });
    await Promise.all([mkdir(workDir, { recursive: true }), stateDirMade]);
    if (stateDir) {
      const repaired = await repairInterruptedWrites(stateDir, COMPUTERS_PROJECT, input.computerId);
      if (repaired.length) log.warn({ stack: input.computerId, files: repaired }, 'removed metadata files a killed Pulumi run left broken');
    }
    command ??= pulumiCommand(opts.toolchain);
    keeper ??= startStackKeeper(opts.stackKeys);
    const args = { projectName: COMPUTERS_PROJECT, stackName: input.computerId, program: () => provider.program(input) as never };
    const wsOpts = {
      workDir,
      pulumiCommand: await command,
      envVars: { ...envVars, ...(await keeper).env },
      // Only `stack init` reads it: an existing stack keeps the provider its settings file names.
      secretsProvider: KEEPER_SECRETS_PROVIDER,
      projectSettings: { name: COMPUTERS_PROJECT, runtime: 'nodejs' as const, backend: { url: opts.backendUrl } },
    };
    // Loaded on first use, as pulumiCommand is: only processes that run stacks pay for the import.
    const { LocalWorkspace, StackAlreadyExistsError, StackNotFoundError } = await import('@pulumi/pulumi/automation/index.js');
    // Each CLI run costs a process and a state read, so the likely case goes first.
    const [first, second] = fresh ? [LocalWorkspace.createStack, LocalWorkspace.selectStack] : [LocalWorkspace.selectStack, LocalWorkspace.createStack];
    try {
      return await first.call(LocalWorkspace, args, wsOpts);
    } catch (err) {
      if (!(err instanceof StackAlreadyExistsError || err instanceof StackNotFoundError)) throw err;
      return second.call(LocalWorkspace, args, wsOpts);
    }
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
          if (m?.type === 'pulumi:pulumi:Stack' && m.new?.outputs) {
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
        const lock = /currently locked by .*?\n\s*(\S+): created by \S+@(\S+) \(pid (\d+)\)/s.exec(text);
        if (lock && attempt < 100) {
          await clearLock(stack, run, { host: lock[2]!, pid: Number(lock[3]) });
          continue;
        }
        if (run.signal?.aborted) throw run.signal.reason;
        const detail = errors.filter((m) => !/^update failed$/i.test(m)).join('; ') || lastLines(text);
        throw new StackOperationFailed(detail, { cause: err });
      }
    }
  }

  async function clearLock(stack: Stack, run: StackRunOptions, holder: { host: string; pid: number }) {
    const deadline = Date.now() + LIVE_LOCK_WAIT_MS;
    while (holder.host === os.hostname() && processAlive(holder.pid)) {
      if (Date.now() > deadline) throw new StackOperationFailed(`stack ${stack.name} is still locked by pid ${holder.pid} on this machine`);
      run.log.info({ stack: stack.name, pid: holder.pid }, 'waiting for the process holding the stack lock');
      await delay(1_000, undefined, { signal: run.signal });
    }
    run.log.warn({ stack: stack.name, holder }, 'clearing a stale stack lock');
    await stack.cancel();
  }

  const gate = createOperationGate();
  return {
    up: (provider, input, runOpts) =>
      gate.run(async () => {
        const o = await up(await open(provider, input, runOpts.log, runOpts.fresh), runOpts);
        const value = (key: string) => {
          const v = o[key]?.value;
          if (v === undefined || v === null || v === '') throw new StackOperationFailed(`provider ${provider.name} gave no ${key} output`);
          return v as unknown;
        };
        return {
          host: String(value('host')),
          port: Number(value('port')),
          username: String(value('username')),
          hostPublicKey: String(value('hostPublicKey')).trim(),
        };
      }),

    destroy: (provider, input, runOpts) =>
      gate.run(async () => {
        const stack = await open(provider, input, runOpts.log);
        // A run killed mid-create leaves "pending creates" that destroy would forget: bring the
        // stack up first, which adopts them (programs' creates are idempotent), then tear it down.
        const state = await stack.exportStack();
        const pending = (state.deployment as { pending_operations?: unknown[] } | undefined)?.pending_operations ?? [];
        if (pending.length > 0) {
          runOpts.log.warn({ stack: input.computerId, pending: pending.length }, 'adopting interrupted operations before destroy');
          await up(stack, runOpts);
        }
        stack.info = async () => undefined;
        await run(stack, runOpts, (onEvent) => stack.destroy({ signal: runOpts.signal, onEvent, color: 'never' }));
        await stack.workspace.removeStack(input.computerId);
        await rm(path.join(opts.workspacesDir, input.computerId), { recursive: true, force: true });
      }),

    whileIdle: (fn) => gate.whileIdle(fn),
  };
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-5).join('\n');
}
