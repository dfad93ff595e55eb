/**
 * Errors of the machine-side operations. Each message says what failed on which machine and,
 * where the user can act, what to do, so a job can store it as a provisioning step's `error`
 * and an API can pass it into `detail` unchanged. SSH-level failures (unreachable, timeout,
 * cancelled, ...) are not wrapped: they arrive as the connection layer's `SshError`s.
 */

/** A command ran on the machine and failed; `outputTail` holds the end of what it printed. */
export class MachineCommandFailed extends Error {
  readonly operation: string;
  readonly exitCode: number | null;
  readonly outputTail: string;

  constructor(opts: { operation: string; message: string; exitCode: number | null; outputTail: string }) {
    super(opts.message);
    this.name = 'MachineCommandFailed';
    this.operation = opts.operation;
    this.exitCode = opts.exitCode;
    this.outputTail = opts.outputTail;
  }
}

/** A program an operation needs is not on the machine's PATH. */
export class ToolNotInstalled extends Error {
  readonly tool: string;
  readonly searchedPath: string;

  constructor(opts: { tool: string; searchedPath: string }) {
    super(
      `${opts.tool} is not installed on the machine (not found on PATH=${opts.searchedPath}); ` + `install it, or put its directory on the PATH in ~/.profile`,
    );
    this.name = 'ToolNotInstalled';
    this.tool = opts.tool;
    this.searchedPath = opts.searchedPath;
  }
}

/** Input that can never work (a malformed repository URL, a bad credential host), caught before anything runs. */
export class InvalidMachineInput extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidMachineInput';
  }
}

/** The last `maxChars` characters of `text`, trimmed, marked when cut. */
export function tailOf(text: string, maxChars = 2_000): string {
  const trimmed = text.trim();
  return trimmed.length <= maxChars ? trimmed : `...${trimmed.slice(-maxChars)}`;
}
