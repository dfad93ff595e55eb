import type { ClientChannel } from 'ssh2';
import type { Connection } from './connection.ts';
import { Cancelled, ConnectionLost, SshTimeout, type SshError } from './errors.ts';
import { serverHonoursSignals, withContext, withStdinWatchdog } from './command.ts';
import { abortedError, openChannel, type ConnectionPool } from './pool.ts';
import { portOf, type SshTarget } from './target.ts';
import { OutputTail } from './output-tail.ts';

export interface ExecOptions {
  /** Directory to run in; the command fails with exit code 1 if it does not exist. */
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string | Buffer;
  /** Covers waiting for a session slot, connecting and running. The remote process is killed. */
  timeoutMs?: number;
  /** Aborting kills the remote process and rejects with `cancelled`. */
  signal?: AbortSignal;
  /**
   * Also kill the remote process when the connection is lost (the watchdog's stdin lifeline, on
   * any server). Without it a server that honours signals keeps running a command whose client
   * went away: a long command that a retry runs again (an install, a setup script) would then run
   * twice at once, for instance after a pause outlasted the connection's keepalives.
   */
  endWithConnection?: boolean;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  /** Bytes of stdout and of stderr kept in the result (the last ones). Default 4 MiB each. */
  maxOutputBytes?: number;
}

export interface ExecResult {
  /** `null` when the process was killed by a signal. */
  exitCode: number | null;
  /** Signal name as Node spells it (e.g. `SIGKILL`) when the process was killed by one. */
  signal: string | null;
  stdout: string;
  stderr: string;
  /** True when stdout or stderr was longer than `maxOutputBytes` and only its tail is kept. */
  truncated: boolean;
}

/**
 * How to stop a remote command on timeout or cancellation: `signal` sends an SSH signal request
 * (OpenSSH >= 7.9 kills the session's process group), `watchdog` wraps the command so the remote
 * shell kills its process group when the channel's stdin closes, `auto` picks by server version.
 */
export type RemoteKill = 'auto' | 'signal' | 'watchdog';

const DEFAULT_MAX_OUTPUT = 4 * 1024 * 1024;

interface ChannelInternals {
  outgoing?: { id: number; state: string };
  _client?: { _protocol?: { signal(id: number, name: string): void } };
}

/**
 * Sends an SSH `signal` request. ssh2's `channel.signal()` stays silent once stdin has been
 * ended (it checks `writable`), which is exactly when a command runs; so go one level down, to
 * the protocol object of the pinned ssh2 1.17.0 (state `eof` = our stdin ended, still open).
 */
function sendSignal(channel: ClientChannel, name: string): void {
  const ch = channel as unknown as ChannelInternals;
  const state = ch.outgoing?.state;
  if (!ch.outgoing || (state !== 'open' && state !== 'eof')) return;
  ch._client?._protocol?.signal(ch.outgoing.id, name);
}

export async function exec(pool: ConnectionPool, remoteKill: RemoteKill, target: SshTarget, command: string, opts: ExecOptions = {}): Promise<ExecResult> {
  const script = withContext(command, opts);
  const signals: AbortSignal[] = [];
  if (opts.signal) signals.push(opts.signal);
  if (opts.timeoutMs !== undefined) signals.push(AbortSignal.timeout(opts.timeoutMs));
  const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
  if (signal?.aborted) throw abortedError(target, signal, opts.timeoutMs);

  return pool.session(target, signal, (conn) => run(conn, remoteKill, target, script, opts, signal));
}

function run(
  conn: Connection,
  remoteKill: RemoteKill,
  target: SshTarget,
  script: string,
  opts: ExecOptions,
  signal: AbortSignal | undefined,
): Promise<ExecResult> {
  const host = target.host;
  const port = portOf(target);
  const signals = remoteKill === 'signal' || (remoteKill === 'auto' && serverHonoursSignals(conn.serverSoftware));
  const watchdog = !signals || opts.endWithConnection === true;
  const stdin = opts.stdin === undefined ? undefined : Buffer.from(opts.stdin);
  const remoteCommand = watchdog ? withStdinWatchdog(script, stdin?.length ?? 0) : script;
  const limit = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const stdout = new OutputTail(limit);
  const stderr = new OutputTail(limit);

  return new Promise<ExecResult>((resolve, reject) => {
    let channel: ClientChannel | undefined;
    let exitCode: number | null = null;
    let exitSignal: string | null = null;
    let failure: SshError | undefined;
    let done = false;

    const finish = () => {
      if (done) return;
      done = true;
      signal?.removeEventListener('abort', onAbort);
      offClose();
      if (failure) reject(failure);
      else resolve({ exitCode, signal: exitSignal, stdout: stdout.toString(), stderr: stderr.toString(), truncated: stdout.truncated || stderr.truncated });
    };

    // Kill, then close; settle once the channel is closed so the session slot is really free.
    const stop = (err: SshError) => {
      if (failure || done) return;
      failure = err;
      if (!channel) return;
      if (signals) sendSignal(channel, 'KILL');
      channel.close();
      setTimeout(finish, 2_000).unref();
    };
    const onAbort = () => {
      const err = abortedError(target, signal, opts.timeoutMs);
      stop(err instanceof SshTimeout || err instanceof Cancelled ? err : new Cancelled({ host, port, cause: err }));
    };
    const offClose = conn.onClose((reason) => {
      failure ??= new ConnectionLost({ host, port, reason });
      finish();
    });
    signal?.addEventListener('abort', onAbort, { once: true });

    const opened = (ch: ClientChannel) => {
      channel = ch;
      if (failure || done) {
        ch.close();
        return finish();
      }
      ch.on('data', (chunk: Buffer) => {
        stdout.push(chunk);
        opts.onStdout?.(chunk);
      });
      ch.stderr.on('data', (chunk: Buffer) => {
        stderr.push(chunk);
        opts.onStderr?.(chunk);
      });
      ch.on('exit', (code: number | null, signalName?: string) => {
        exitCode = typeof code === 'number' ? code : null;
        exitSignal = signalName ?? null;
      });
      ch.on('close', () => {
        if (conn.closed) failure ??= new ConnectionLost({ host, port, reason: conn.closeReason ?? 'closed' });
        finish();
      });
      // In watchdog mode stdin stays open: it is the remote command's lifeline.
      if (watchdog) {
        if (stdin && stdin.length > 0) ch.write(stdin);
      } else {
        ch.end(stdin);
      }
    };
    // Wire the channel inside ssh2's callback: output, exit status and close of a short command
    // can arrive in the same packet batch as the open confirmation, before a promise resolves.
    const open = (cb: (err: Error | undefined, ch: ClientChannel) => void) =>
      conn.client.exec(remoteCommand, (err, ch) => {
        if (!err) opened(ch);
        cb(err, ch);
      });
    openChannel<ClientChannel>(target, conn, open).catch((err: SshError) => {
      failure ??= err;
      finish();
    });
  });
}
