import { performance } from 'node:perf_hooks';
import { shellQuote, type SshClient, type SshTarget } from '../ssh/index.ts';
import { MachineCommandFailed, tailOf } from './errors.ts';
import type { InstallPlan } from './install-plan.ts';
import { OutputTail } from '../ssh/output-tail.ts';
import { LOGIN_PATH, requireTool, throwIfToolMissing } from './remote-shell.ts';

const INSTALL_OUTPUT_TAIL_BYTES = 64 * 1024;

export interface RunInstallOptions {
  signal?: AbortSignal;
  /** Default 30 minutes; on expiry the remote install is killed and `SshTimeout` is thrown. */
  timeoutMs?: number;
  /** Output as it arrives, stdout and stderr interleaved as the machine wrote them. */
  onOutput?: (chunk: Buffer) => void;
}

export interface InstallResult {
  /** `null` when the install was killed by a signal. A non-zero code is a result, not an error. */
  exitCode: number | null;
  /** The last 64 KiB of output. */
  outputTail: string;
  durationMs: number;
}

/**
 * Tools read these to skip prompts, colours and progress bars that make no sense in a log
 * nobody can answer.
 */
const NON_INTERACTIVE = {
  CI: 'true',
  PIP_NO_INPUT: '1',
  PIP_DISABLE_PIP_VERSION_CHECK: '1',
  POETRY_NO_INTERACTION: '1',
  NPM_CONFIG_FUND: 'false',
  // The audit is a second registry round trip that an unattended install has no use for.
  NPM_CONFIG_AUDIT: 'false',
  NPM_CONFIG_UPDATE_NOTIFIER: 'false',
  NO_COLOR: '1',
};

const NO_DIRECTORY = '__agentplane__:no-directory';

/**
 * Runs one install plan on the machine. A tool missing from the PATH throws `ToolNotInstalled`,
 * a missing directory `MachineCommandFailed`; the SSH layer's timeout and cancellation errors
 * pass through (the remote process is killed), with the output so far already given to `onOutput`.
 */
export async function runInstall(ssh: SshClient, target: SshTarget, plan: InstallPlan, opts: RunInstallOptions = {}): Promise<InstallResult> {
  const tail = new OutputTail(INSTALL_OUTPUT_TAIL_BYTES);
  const started = performance.now();
  const script = [
    LOGIN_PATH,
    requireTool(plan.tool),
    `cd -- ${shellQuote(plan.directory)} 2>/dev/null || { echo ${NO_DIRECTORY} >&2; exit 1; }`,
    // One stream, so the log shows errors next to the step that printed them.
    'exec 2>&1',
    plan.command,
  ].join('\n');
  const res = await ssh.exec(target, script, {
    env: NON_INTERACTIVE,
    signal: opts.signal,
    timeoutMs: opts.timeoutMs ?? 30 * 60_000,
    // An install cut off from the control plane is run again by the step's retry: never two at once.
    endWithConnection: true,
    maxOutputBytes: INSTALL_OUTPUT_TAIL_BYTES,
    onStdout: (chunk) => {
      tail.push(chunk);
      opts.onOutput?.(chunk);
    },
  });
  throwIfToolMissing(res.exitCode, res.stderr);
  if (res.exitCode === 1 && res.stderr.includes(NO_DIRECTORY)) {
    throw new MachineCommandFailed({
      operation: 'install',
      message: `cannot install with ${plan.manager}: directory ${plan.directory} does not exist on the machine; clone the repository again`,
      exitCode: res.exitCode,
      outputTail: tailOf(res.stderr),
    });
  }
  return { exitCode: res.exitCode, outputTail: tail.toString(), durationMs: Math.round(performance.now() - started) };
}
