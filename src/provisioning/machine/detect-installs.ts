import { shellQuote, type SshClient, type SshTarget } from '../../ssh/index.ts';
import { MachineCommandFailed, tailOf } from './errors.ts';
import { IGNORED_DIRECTORIES, MANIFEST_FILES, planInstalls, type InstallPlan } from './install-plan.ts';

/** Manifests deeper than this (repo root = depth 1) are not looked for: monorepo packages sit at most two levels down. */
const MAX_DEPTH = 3;

/**
 * Finds the repository's manifests and lockfiles with one `find` on the machine and turns them
 * into install plans (see `planInstalls`). `repoDir` as `cloneRepo` returned it.
 */
export async function detectInstallPlans(
  ssh: SshClient,
  target: SshTarget,
  repoDir: string,
  opts: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<InstallPlan[]> {
  const prune = IGNORED_DIRECTORIES.map((d) => `-name ${shellQuote(d)}`).join(' -o ');
  const names = MANIFEST_FILES.map((f) => `-name ${shellQuote(f)}`).join(' -o ');
  const command = [
    `cd -- ${shellQuote(repoDir)} || exit 3`,
    `find . -maxdepth ${MAX_DEPTH} -type d \\( ${prune} \\) -prune -o \\( -type f -o -type l \\) \\( ${names} \\) -print`,
  ].join('\n');
  const res = await ssh.exec(target, command, { signal: opts.signal, timeoutMs: opts.timeoutMs ?? 60_000 });
  if (res.exitCode === 3) {
    throw new MachineCommandFailed({
      operation: 'detect-installs',
      message: `repository directory ${repoDir} does not exist on the machine; clone the repository again`,
      exitCode: res.exitCode,
      outputTail: tailOf(res.stderr),
    });
  }
  // find exits 1 when some directory was unreadable but still prints what it found.
  if (res.exitCode !== 0 && res.stdout === '') {
    throw new MachineCommandFailed({
      operation: 'detect-installs',
      message: `cannot list the files of ${repoDir} on the machine (exit ${res.exitCode}): ${tailOf(res.stderr) || 'no output'}`,
      exitCode: res.exitCode,
      outputTail: tailOf(res.stderr),
    });
  }
  return planInstalls(res.stdout.split('\n'), repoDir);
}
