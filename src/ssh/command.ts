import { AGENT_SERVER_SOFTWARE } from '../relay/gateway/protocol.ts';

/**
 * Builds the command line sent to the remote login shell. Everything here is POSIX sh, which
 * bash, dash and zsh all accept.
 */

/** Quotes a string as one word for a POSIX shell. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Prefixes `command` with `export` and `cd` lines. Environment goes in the command rather than in
 * SSH `env` requests, which sshd drops unless its AcceptEnv lists each name.
 */
export function withContext(command: string, opts: { cwd?: string; env?: Record<string, string> }): string {
  const lines: string[] = [];
  const env = Object.entries(opts.env ?? {});
  for (const [name] of env) {
    if (!ENV_NAME.test(name)) throw new TypeError(`invalid environment variable name: ${JSON.stringify(name)}`);
  }
  if (env.length > 0) lines.push(`export ${env.map(([k, v]) => `${k}=${shellQuote(v)}`).join(' ')}`);
  if (opts.cwd !== undefined) lines.push(`cd -- ${shellQuote(opts.cwd)} || exit 1`);
  lines.push(command);
  return lines.join('\n');
}

/**
 * For servers that ignore SSH `signal` requests: runs `script` in the background and keeps the
 * channel's stdin open as a lifeline. When stdin closes before the script has finished (the
 * client closed the channel on timeout or cancellation, or the connection died), a watchdog
 * kills the session's whole process group. Stdin for the script, if any, is the first
 * `stdinBytes` bytes on the channel, read into a temp file before the script starts so the
 * watchdog is the lifeline's only reader. Exit codes survive; a killed script reports 128+n.
 */
export function withStdinWatchdog(script: string, stdinBytes: number): string {
  const input = stdinBytes > 0 ? '"$__ap_in"' : '/dev/null';
  return [
    'exec 3<&0 </dev/null',
    '__ap_in=',
    stdinBytes > 0 ? `__ap_in=$(mktemp) && head -c ${stdinBytes} <&3 >"$__ap_in" || exit 1` : '',
    `sh -c ${shellQuote(script)} <${input} 3<&- &`,
    '__ap_pid=$!',
    '{ cat <&3 >/dev/null 2>&1; kill -KILL 0; } >/dev/null 2>&1 &',
    '__ap_dog=$!',
    'exec 3<&-',
    'wait "$__ap_pid"; __ap_status=$?',
    'kill "$__ap_dog" 2>/dev/null',
    '[ -n "$__ap_in" ] && rm -f "$__ap_in"',
    'exit "$__ap_status"',
  ]
    .filter(Boolean)
    .join('\n');
}

/**
 * OpenSSH acts on `signal` channel requests (killpg of the session) since 7.9; with no reply to
 * such requests, the server's version is the only way to know.
 */
export function serverHonoursSignals(serverSoftware: string): boolean {
  if (serverSoftware === AGENT_SERVER_SOFTWARE) return true;
  const m = /^OpenSSH_(\d+)\.(\d+)/.exec(serverSoftware);
  if (!m) return false;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  return major > 7 || (major === 7 && minor >= 9);
}
