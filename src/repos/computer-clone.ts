import path from 'node:path/posix';
import { shellQuote, type SshClient, type SshTarget } from '../ssh/index.ts';
import { MachineCommandFailed, tailOf } from '../provisioning/machine/errors.ts';
import { LOGIN_PATH, requireTool, throwIfToolMissing } from '../provisioning/machine/remote-shell.ts';
import { computerRepo, directoryCandidates, sameRepository } from './policy.ts';

export interface CloneOptions {
  url: string;
  /** Absolute, or relative to the remote user's home (a leading `~/` is accepted). */
  workspaceDir: string;
  signal?: AbortSignal;
  /** Default 20 minutes. */
  timeoutMs?: number;
  /** Whether git credentials were written to the machine; only changes the hint on an authentication failure. */
  credentialsConfigured?: boolean;
}

export interface CloneResult {
  /** Absolute path of the clone on the machine. */
  directory: string;
  /** `cloned` the first time, `fetched` when the directory already held this repository. */
  action: 'cloned' | 'fetched';
}

/** What is at a candidate directory now. */
export type CandidateState = { state: 'missing' } | { state: 'empty' } | { state: 'git'; origin: string } | { state: 'other' };

export type CloneDecision = { action: 'clone' | 'fetch'; name: string } | { action: 'none' };

/**
 * An existing clone of the same repository wins over a free name, so a retry after a partial
 * run, or after another repository took the first name meanwhile, finds the first clone again.
 */
export function decideCloneTarget(url: string, candidates: string[], states: CandidateState[]): CloneDecision {
  const existing = candidates.findIndex((_, i) => {
    const s = states[i];
    return s?.state === 'git' && sameRepository(s.origin, url);
  });
  if (existing >= 0) return { action: 'fetch', name: candidates[existing]! };
  const free = candidates.findIndex((_, i) => states[i]?.state === 'missing' || states[i]?.state === 'empty');
  if (free >= 0) return { action: 'clone', name: candidates[free]! };
  return { action: 'none' };
}

/** Parses the probe's lines: `missing`, `empty`, `other`, or `git <origin url>`, one per candidate. */
export function parseProbe(stdout: string, count: number): CandidateState[] {
  const lines = stdout.split('\n').slice(0, count);
  return lines.map((line): CandidateState => {
    if (line === 'missing' || line === 'empty' || line === 'other') return { state: line };
    if (line.startsWith('git ')) return { state: 'git', origin: line.slice(4) };
    return { state: 'other' };
  });
}

function workspacePath(dir: string): string {
  const d = dir.startsWith('~/') ? dir.slice(2) : dir === '~' ? '.' : dir;
  if (d.trim() === '') throw new TypeError('workspaceDir must not be empty');
  return d;
}

const GIT_ENV = [
  // No terminal over exec, but git would still try /dev/tty or an askpass program and hang or fail obscurely.
  'export GIT_TERMINAL_PROMPT=0 GCM_INTERACTIVE=never',
  // ssh-style URLs: fail instead of prompting, and accept a git host's key the first time (as a
  // person cloning it would) unless the user configured ssh for git themselves.
  'if [ -z "${GIT_SSH_COMMAND:-}" ] && [ -z "$(git config --get core.sshCommand)" ]; then export GIT_SSH_COMMAND="ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new"; fi',
].join('\n');

const AUTH_FAILURE =
  /Authentication failed|could not read (Username|Password)|terminal prompts disabled|Permission denied \(publickey|Repository not found|HTTP Basic: Access denied|returned error: 40[13]/;

/**
 * Clones `url` into `<workspaceDir>/<name>` (see `directoryCandidates`) or, when that directory
 * already holds the repository, fetches, leaving the working tree as it is: a retried job is
 * harmless and an agent's local changes survive. A clone goes to a hidden sibling first and is
 * renamed into place only when complete, so an interrupted clone never looks like a finished one.
 */
export async function cloneRepo(ssh: SshClient, target: SshTarget, opts: CloneOptions): Promise<CloneResult> {
  const repo = computerRepo(opts.url);
  const workspace = workspacePath(opts.workspaceDir);
  const candidates = directoryCandidates(repo);
  const timeoutMs = opts.timeoutMs ?? 20 * 60_000;
  const deadline = Date.now() + timeoutMs;

  const probe = await ssh.exec(
    target,
    [
      LOGIN_PATH,
      requireTool('git'),
      `for __ap_name in ${candidates.map(shellQuote).join(' ')}; do`,
      `  d=${shellQuote(workspace)}/"$__ap_name"`,
      '  if [ ! -e "$d" ] && [ ! -L "$d" ]; then echo missing',
      '  elif [ -d "$d" ] && [ -z "$(ls -A -- "$d" 2>/dev/null)" ]; then echo empty',
      '  elif [ -e "$d/.git" ]; then printf "git %s\\n" "$(git -C "$d" config --get remote.origin.url)"',
      '  else echo other; fi',
      'done',
    ].join('\n'),
    { signal: opts.signal, timeoutMs },
  );
  throwIfToolMissing(probe.exitCode, probe.stderr);
  if (probe.exitCode !== 0) {
    throw new MachineCommandFailed({
      operation: 'clone',
      message: `cannot inspect ${workspace} on the machine before cloning ${repo.url}: ${tailOf(probe.stderr) || `exit ${probe.exitCode}`}`,
      exitCode: probe.exitCode,
      outputTail: tailOf(probe.stderr),
    });
  }
  const decision = decideCloneTarget(repo.url, candidates, parseProbe(probe.stdout, candidates.length));
  if (decision.action === 'none') {
    throw new MachineCommandFailed({
      operation: 'clone',
      message: `cannot clone ${repo.url}: ${candidates.map((c) => path.join(workspace, c)).join(', ')} already exist on the machine and hold something else; move one of them away`,
      exitCode: null,
      outputTail: '',
    });
  }

  const dir = `${shellQuote(workspace)}/${shellQuote(decision.name)}`;
  const tmp = `${shellQuote(workspace)}/${shellQuote(`.${decision.name}.agentplane-clone`)}`;
  const script =
    decision.action === 'clone'
      ? [
          `mkdir -p -- ${shellQuote(workspace)} || exit 1`,
          // A fixed name, so a retry after a killed clone removes the leftover.
          `rm -rf -- ${tmp}`,
          `git clone --no-progress -- ${shellQuote(repo.url)} ${tmp} || { __ap_s=$?; rm -rf -- ${tmp}; exit $__ap_s; }`,
          // An empty directory may stand in the way; anything else appeared meanwhile and is left alone.
          `if [ -e ${dir} ] || [ -L ${dir} ]; then rmdir -- ${dir} || { rm -rf -- ${tmp}; exit 1; }; fi`,
          `mv -- ${tmp} ${dir} || { rm -rf -- ${tmp}; exit 1; }`,
          `cd -- ${dir} && pwd -P`,
        ]
      : [`cd -- ${dir} || exit 1`, 'git fetch --prune --no-progress origin || exit $?', 'pwd -P'];
  const res = await ssh.exec(target, [LOGIN_PATH, GIT_ENV, ...script].join('\n'), {
    signal: opts.signal,
    timeoutMs: Math.max(1, deadline - Date.now()),
    maxOutputBytes: 64 * 1024,
    // A clone cut off from the control plane is run again by the step's retry, into the same temporary directory.
    endWithConnection: true,
  });
  const where = path.join(workspace, decision.name);
  if (res.exitCode !== 0) {
    const stderr = tailOf(res.stderr);
    let hint = '';
    if (AUTH_FAILURE.test(res.stderr)) {
      hint = opts.credentialsConfigured
        ? `; the git credentials on the machine were not accepted for ${repo.host ?? 'this repository'}: check the integration's token and its access to the repository`
        : `; no git credentials are configured on the machine: connect a source-control integration for ${repo.host ?? 'this host'} and refresh the computer`;
    }
    throw new MachineCommandFailed({
      operation: 'clone',
      message: `git ${decision.action} of ${repo.url} into ${where} failed (exit ${res.exitCode ?? res.signal}): ${stderr || 'no output'}${hint}`,
      exitCode: res.exitCode,
      outputTail: stderr,
    });
  }
  const directory = res.stdout.trim().split('\n').at(-1) ?? where;
  return { directory, action: decision.action === 'clone' ? 'cloned' : 'fetched' };
}
