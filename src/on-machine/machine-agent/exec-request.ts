import { spawn } from 'node:child_process';
import os from 'node:os';
import type { ServerChannel } from 'ssh2';

/** Signals an SSH `exit-signal` can name (RFC 4254 6.10); others are reported as 128 + n. */
const SSH_SIGNALS = new Set(['ABRT', 'ALRM', 'FPE', 'HUP', 'ILL', 'INT', 'KILL', 'PIPE', 'QUIT', 'SEGV', 'TERM', 'USR1', 'USR2']);

export interface RunningCommand {
  /** Sends `signal` (an SSH name such as `KILL`, or `SIGKILL`) to the command's whole process group. */
  kill(signal: string): void;
}

/**
 * Runs an SSH `exec` request as sshd would for a non-login session: `/bin/sh -c <command>` in
 * `home`, stdin from the channel, stdout and stderr to it, then the exit status. `argv` runs
 * something else the same way (a shell on a terminal, see terminal.ts).
 *
 * The command leads a process group of its own (`detached`), for two reasons. The agent can kill
 * everything the command started, which it does when the channel closes before the command has
 * finished (the control plane's timeout or cancellation) and on `signal` requests. And the
 * control plane's stdin watchdog (withStdinWatchdog in ../../ssh/command.ts) ends with
 * `kill -KILL 0`, which must hit the command's group, never the agent's.
 */
export function runExecRequest(
  channel: ServerChannel,
  command: string,
  env: NodeJS.ProcessEnv,
  home: string,
  argv = ['/bin/sh', '-c', command],
): RunningCommand {
  const child = spawn(argv[0]!, argv.slice(1), { cwd: home, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  let finished = false;
  let channelClosed = false;

  const killGroup = (signal: NodeJS.Signals) => {
    if (finished || child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // The group is already gone.
    }
  };

  child.stdin.on('error', () => {});
  channel.pipe(child.stdin);
  child.stdout.pipe(channel, { end: false });
  child.stderr.pipe(channel.stderr, { end: false });

  channel.on('error', () => {});
  channel.once('close', () => {
    channelClosed = true;
    // Closed before the command finished: nobody reads its output any more.
    killGroup('SIGKILL');
  });

  child.once('error', (err) => {
    finished = true;
    if (channelClosed) return;
    channel.stderr.write(`agentplane agent: cannot run ${argv[0]}: ${err.message}\n`);
    channel.exit(127);
    channel.end();
  });

  // 'close' rather than 'exit': it waits for stdout and stderr to be drained, as sshd does.
  child.once('close', (code, signal) => {
    finished = true;
    if (channelClosed) return;
    if (signal) {
      const name = signal.replace(/^SIG/, '');
      if (SSH_SIGNALS.has(name)) channel.exit(name, false, '');
      else channel.exit(128 + (os.constants.signals[signal] ?? 0));
    } else {
      channel.exit(code ?? 0);
    }
    channel.end();
  });

  return {
    kill(signal) {
      const name = `SIG${signal.toUpperCase().replace(/^SIG/, '')}`;
      if (name in os.constants.signals) killGroup(name as NodeJS.Signals);
    },
  };
}
