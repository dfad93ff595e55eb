import os from 'node:os';
import type { PseudoTtyInfo } from 'ssh2';
import { shellQuote } from '../../ssh/command.ts';

/** The user's login shell from the password database, as sshd starts it. */
export function loginShell(): string {
  return os.userInfo().shell || '/bin/sh';
}

/**
 * The command line that runs `command` (a login shell when undefined) on a terminal of the size
 * the client asked for. Node cannot open a pseudo-terminal itself without a native module, so the
 * agent has util-linux `script` open one (`-e`: its exit status is the command's). The size is
 * set once at start: `script` cannot be told of later window changes through a pipe.
 */
export function onTerminal(command: string | undefined, pty: PseudoTtyInfo): { argv: string[]; env: NodeJS.ProcessEnv } {
  const shell = loginShell();
  const size = pty.rows > 0 && pty.cols > 0 ? `stty rows ${pty.rows} cols ${pty.cols} 2>/dev/null; ` : '';
  const inner = command ?? `exec ${shellQuote(shell)} -l`;
  return {
    argv: ['script', '-qfec', `${size}${inner}`, '/dev/null'],
    env: { TERM: pty.term || 'xterm', SHELL: shell },
  };
}
