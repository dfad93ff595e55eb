import { shellQuote, type SshClient, type SshTarget } from '../ssh/index.ts';
import { InvalidMachineInput, MachineCommandFailed, tailOf } from '../provisioning/machine/errors.ts';
import { LOGIN_PATH, requireTool, throwIfToolMissing } from '../provisioning/machine/remote-shell.ts';

export interface GitCredential {
  /** Host name, with `:port` when not 443, e.g. `github.com` or `git.example.com:8443`. */
  host: string;
  username: string;
  token: string;
}

/** Relative to the remote user's home, where both SFTP and exec start. */
const DIR = '.config/agentplane';
export const GIT_CREDENTIALS_FILE = `${DIR}/git-credentials`;
const STAGED = `${GIT_CREDENTIALS_FILE}.new`;
const GIT_CREDENTIAL_HELPER = `${DIR}/git-credential-helper`;

/**
 * The helper git runs. Not plain `store --file=...`: git also calls every helper with `store`
 * after a credential worked and `erase` after one was rejected, so one transient 401 would have
 * git-credential-store delete the token from our file, and credentials from other helpers would
 * be copied into it. This one answers `get` from the file and ignores the rest, leaving the
 * file exactly as the last refresh wrote it.
 */
const HELPER_SCRIPT = `#!/bin/sh
# Written by agentplane: answers git's credential requests from the file beside it.
[ "$1" = get ] || exit 0
exec git credential-store --file="$(dirname "$0")/git-credentials" get
`;

/** The value of each `credential.https://<host>.helper` we own; a shell snippet so it follows $HOME. */
const HELPER_CONFIG = `!"$HOME"/${GIT_CREDENTIAL_HELPER}`;

const HOST = /^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::\d{1,5})?$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

function validate(credentials: GitCredential[]): void {
  for (const c of credentials) {
    if (!HOST.test(c.host))
      throw new InvalidMachineInput(`git credential host ${JSON.stringify(c.host)} is not a host name (e.g. github.com or git.example.com:8443)`);
    if (c.username === '' || CONTROL.test(c.username))
      throw new InvalidMachineInput(`git credential for ${c.host} needs a username without control characters`);
    if (c.token === '' || CONTROL.test(c.token)) throw new InvalidMachineInput(`git credential for ${c.host} needs a token without control characters`);
  }
}

/** git-credential-store's format: one URL per line, user and password percent-encoded. Later duplicates of host+user win. */
function credentialStoreFile(credentials: GitCredential[]): string {
  const byKey = new Map<string, GitCredential>();
  for (const c of credentials) byKey.set(`${c.host.toLowerCase()}\n${c.username}`, c);
  return [...byKey.values()].map((c) => `https://${encodeURIComponent(c.username)}:${encodeURIComponent(c.token)}@${c.host.toLowerCase()}\n`).join('');
}

function regexLiteral(text: string): string {
  return `^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
}

/** Removes every `credential.<url>.helper` entry whose value is ours, and only those values. */
const UNSET_OUR_HELPERS = [
  `__ap_helper=${shellQuote(HELPER_CONFIG)}`,
  `git config --global --get-regexp '^credential\\..*\\.helper$' | while read -r __ap_key __ap_value; do`,
  `  if [ "$__ap_value" = "$__ap_helper" ]; then git config --global --unset-all "$__ap_key" ${shellQuote(regexLiteral(HELPER_CONFIG))} || exit 1; fi`,
  'done || exit 1',
].join('\n');

/**
 * Makes git on the machine, for the remote user, authenticate to each credential's host with
 * its token: a credential-store file readable only by that user (0600 in a 0700 directory) and
 * a per-host `credential.https://<host>.helper` in the user's global git config, so the user's
 * own helpers for other hosts keep working. Re-running replaces everything it wrote before;
 * an empty list removes the file, the helper and the config entries. Tokens travel only over
 * SFTP, never in a command line that `ps` would show. Concurrent calls for one machine must be
 * serialised by the caller.
 */
export async function writeGitCredentials(
  ssh: SshClient,
  target: SshTarget,
  credentials: GitCredential[],
  opts: { signal?: AbortSignal } = {},
): Promise<{ configured: number }> {
  validate(credentials);
  const run = async (step: string, script: string) => {
    const res = await ssh.exec(target, [LOGIN_PATH, requireTool('git'), script].join('\n'), { signal: opts.signal, timeoutMs: 60_000 });
    throwIfToolMissing(res.exitCode, res.stderr);
    if (res.exitCode !== 0) {
      throw new MachineCommandFailed({
        operation: 'git-credentials',
        message: `cannot ${step} on the machine (exit ${res.exitCode ?? res.signal}): ${tailOf(res.stderr) || 'no output'}`,
        exitCode: res.exitCode,
        outputTail: tailOf(res.stderr),
      });
    }
  };

  if (credentials.length === 0) {
    await run(
      'remove the git credentials',
      [UNSET_OUR_HELPERS, `rm -f -- ${shellQuote(GIT_CREDENTIALS_FILE)} ${shellQuote(STAGED)} ${shellQuote(GIT_CREDENTIAL_HELPER)}`].join('\n'),
    );
    return { configured: 0 };
  }

  const content = credentialStoreFile(credentials);
  // The directory is locked down before any token is written into it.
  await run(
    'prepare the git credentials directory',
    `umask 077 && mkdir -p -- ${shellQuote(DIR)} && chmod 700 -- ${shellQuote(DIR)} && rm -f -- ${shellQuote(STAGED)}`,
  );
  await ssh.writeFile(target, STAGED, content, { mode: 0o600, signal: opts.signal });
  await ssh.writeFile(target, GIT_CREDENTIAL_HELPER, HELPER_SCRIPT, { mode: 0o700, signal: opts.signal });
  const hosts = [...new Set(credentials.map((c) => c.host.toLowerCase()))];
  await run(
    'configure git to use the credentials',
    [
      `chmod 600 -- ${shellQuote(STAGED)} && mv -f -- ${shellQuote(STAGED)} ${shellQuote(GIT_CREDENTIALS_FILE)} || exit 1`,
      `chmod 700 -- ${shellQuote(GIT_CREDENTIAL_HELPER)} || exit 1`,
      UNSET_OUR_HELPERS,
      ...hosts.map((h) => `git config --global --add ${shellQuote(`credential.https://${h}.helper`)} "$__ap_helper" || exit 1`),
    ].join('\n'),
  );
  return { configured: content.split('\n').filter(Boolean).length };
}
