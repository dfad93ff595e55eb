import { shellQuote } from '../../ssh/index.ts';
import { ToolNotInstalled } from './errors.ts';

/**
 * Shell snippets shared by the machine-side commands. An SSH `exec` gets sshd's bare default
 * PATH, without what the user's login adds (Go, Cargo, pyenv, Homebrew, ...), so a tool found
 * in an interactive login would look missing.
 */

/**
 * Takes PATH from /etc/profile and ~/.profile, read in a subshell so that a broken or noisy
 * profile can neither print into our output nor end our shell (a syntax error in a sourced
 * file exits dash), then appends the usual per-user tool directories that exist.
 */
export const LOGIN_PATH = [
  '__ap_path=$( { [ -r /etc/profile ] && . /etc/profile; [ -r "$HOME/.profile" ] && . "$HOME/.profile"; } >/dev/null 2>&1 </dev/null; printf %s "$PATH")',
  '[ -n "$__ap_path" ] && PATH=$__ap_path',
  'for __ap_dir in "$HOME/.local/bin" "$HOME/bin" "$HOME/.cargo/bin" "$HOME/go/bin" /usr/local/go/bin "$HOME/.bun/bin" ' +
    '"$HOME/.volta/bin" "$HOME/.local/share/pnpm" "$HOME/.yarn/bin" "$HOME/.pyenv/shims" "$HOME/.rbenv/shims" ' +
    '"$HOME/.asdf/shims" "$HOME/.local/share/mise/shims" /opt/homebrew/bin /usr/local/bin /snap/bin; do',
  '  case ":$PATH:" in *":$__ap_dir:"*) ;; *) [ -d "$__ap_dir" ] && PATH="$PATH:$__ap_dir" ;; esac',
  'done',
  'export PATH',
].join('\n');

const MISSING_TOOL = '__agentplane__:missing-tool';

/** Exits 127 with a marker on stderr that `throwIfToolMissing` recognises. */
export function requireTool(tool: string): string {
  return `command -v ${shellQuote(tool)} >/dev/null 2>&1 || { printf '%s %s %s\\n' ${MISSING_TOOL} ${shellQuote(tool)} "$PATH" >&2; exit 127; }`;
}

export function throwIfToolMissing(exitCode: number | null, stderr: string): void {
  if (exitCode !== 127) return;
  const line = stderr.split('\n').find((l) => l.startsWith(`${MISSING_TOOL} `));
  if (!line) return;
  const [, tool = '?', ...rest] = line.split(' ');
  throw new ToolNotInstalled({ tool, searchedPath: rest.join(' ') });
}
