import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { missingLocalPrerequisites } from '../../src/provisioning/providers/local/prerequisites.ts';
import { CGROUP_PARENT, computerRoot, defaultLocalRoot, localNames, type LocalNames } from '../../src/provisioning/providers/local/names.ts';
import { SCRIPTS, scriptEnvironment } from '../../src/provisioning/providers/local/scripts.ts';
import { COMPUTERS_PROJECT } from '../../src/provisioning/pulumi/computer-stacks.ts';
import { locatePulumiToolchain } from '../../src/provisioning/pulumi/toolchain.ts';
import { freePort } from './http.ts';

/** Why the local provider cannot run here (root, iproute2, sshd, cgroups, the Pulumi CLI), or undefined. */
export async function localProviderMissing(): Promise<string | undefined> {
  const missing = await missingLocalPrerequisites(locatePulumiToolchain());
  return missing.length ? `local provider prerequisites missing: ${missing.join(', ')}` : undefined;
}

const run = (cmd: string, args: string[]) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return '';
  }
};

/**
 * The host names of a computer of a test server on `dataDir`: under the computers' root beside it
 * (AGENTPLANE_LOCAL_ROOT unset), or the data directory's legacy folder where it is there.
 */
export function localComputerNames(dataDir: string, computerId: string): LocalNames {
  return localNames(computerRoot({ root: defaultLocalRoot(dataDir), legacyRoot: path.join(dataDir, 'computers') }, computerId), computerId);
}

/** The cgroup directories of a computer that exist on this host (v1 hierarchies or the v2 tree). */
export function cgroupDirs(computerId: string): string[] {
  const roots = readdirSync('/sys/fs/cgroup').map((d) => path.join('/sys/fs/cgroup', d));
  return [...roots, '/sys/fs/cgroup'].map((r) => path.join(r, CGROUP_PARENT, computerId)).filter((d) => existsSync(d));
}

/**
 * Everything a local computer leaves on the host, as a list of what is still there: its network
 * namespace, host-side veth, unix user, cgroups, processes, directory, address slot, Pulumi stack
 * and workspace. Empty means nothing is left.
 */
export function hostTraces(dataDir: string, computerId: string): string[] {
  const n = localComputerNames(dataDir, computerId);
  const traces: string[] = [];
  if (existsSync(`/run/netns/${n.netns}`)) traces.push(`netns ${n.netns}`);
  if (run('ip', ['link', 'show', n.vethHost])) traces.push(`veth ${n.vethHost}`);
  if (run('getent', ['passwd', n.user])) traces.push(`user ${n.user}`);
  if (run('getent', ['group', n.user])) traces.push(`group ${n.user}`);
  for (const d of cgroupDirs(computerId)) traces.push(`cgroup ${d}`);
  const pids = run('pgrep', ['-f', computerId]).trim();
  if (pids) traces.push(`processes ${pids.split('\n').join(',')}`);
  if (existsSync(n.dir)) traces.push(`directory ${n.dir}`);
  const slots = '/run/agentplane/local/slots';
  for (const f of existsSync(slots) ? readdirSync(slots) : []) {
    if (readFileSync(path.join(slots, f), 'utf8').trim() === computerId) traces.push(`address slot ${f}`);
  }
  const stack = path.join(dataDir, 'pulumi', 'state', '.pulumi', 'stacks', COMPUTERS_PROJECT, `${computerId}.json`);
  if (existsSync(stack)) traces.push(`stack ${stack}`);
  const workspace = path.join(dataDir, 'pulumi', 'workspaces', computerId);
  if (existsSync(workspace)) traces.push(`workspace ${workspace}`);
  return traces;
}

/**
 * Removes a local computer from the host by running its provider's delete scripts directly, for a
 * test that failed before its teardown ran (the control plane that would tear it down is gone).
 */
export function removeLocalComputer(dataDir: string, computerId: string): void {
  const env = { ...process.env, ...scriptEnvironment(path.dirname(localComputerNames(dataDir, computerId).dir), computerId) };
  for (const part of ['power', 'sshd', 'network', 'user', 'cgroup'] as const) {
    try {
      execFileSync('/bin/sh', ['-c', SCRIPTS[part].delete], { env, stdio: 'ignore' });
    } catch {
      // Best effort: what one script cannot remove, the next may not depend on.
    }
  }
}

/** An IPv4 address of this host that a computer's namespace reaches through its default route. */
export function hostAddress(): string {
  for (const [name, addresses] of Object.entries(os.networkInterfaces())) {
    if (name.startsWith('aph')) continue;
    const v4 = addresses?.find((a) => a.family === 'IPv4' && !a.internal);
    if (v4) return v4.address;
  }
  throw new Error('this host has no non-loopback IPv4 address for local computers to reach');
}

export interface GitDaemon {
  /** `git://host:port/<name>.git` of a served repository. */
  url(name: string): string;
  /** The host port it listens on: computers reach it once AGENTPLANE_LOCAL_ALLOW names it. */
  port: number;
  stop(): Promise<void>;
}

/**
 * `git daemon` serving bare repositories made from `repos` (name -> files), on an address local
 * computers reach. (A file:// URL would not do: git refuses repositories owned by another user.)
 */
export async function startGitDaemon(repos: Record<string, Record<string, string>>): Promise<GitDaemon> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'agentplane-git-'));
  for (const [name, files] of Object.entries(repos)) {
    const work = path.join(base, `${name}-work`);
    const git = (...args: string[]) => execFileSync('git', ['-C', work, ...args], { stdio: 'pipe' });
    execFileSync('git', ['init', '-q', '-b', 'main', work]);
    for (const [file, content] of Object.entries(files)) execFileSync('sh', ['-c', 'cat > "$1"', 'sh', path.join(work, file)], { input: content });
    git('add', '.');
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'init');
    execFileSync('git', ['clone', '-q', '--bare', work, path.join(base, `${name}.git`)]);
  }
  const host = hostAddress();
  const port = await freePort(host);
  const daemon = spawn('git', ['daemon', '--reuseaddr', '--export-all', `--base-path=${base}`, `--listen=${host}`, `--port=${port}`, base], {
    stdio: 'ignore',
  });
  const stop = async () => {
    daemon.kill('SIGTERM');
    rmSync(base, { recursive: true, force: true });
  };
  // Ready once a clone through it works; a daemon that never gets there is not left running.
  const probeDir = path.join(base, 'probe');
  const first = Object.keys(repos)[0]!;
  for (let i = 0; ; i++) {
    try {
      execFileSync('git', ['clone', '-q', `git://${host}:${port}/${first}.git`, probeDir], { stdio: 'pipe' });
      break;
    } catch (err) {
      if (i > 100) {
        await stop();
        throw err;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { url: (name) => `git://${host}:${port}/${name}.git`, port, stop };
}

/**
 * Ends a computer's sandbox, sshd and every session in it, as a crash would: every process of its
 * network namespace is killed (one gone already, with the namespace's first process, is fine).
 */
export function killSandbox(dataDir: string, computerId: string): void {
  const { netns } = localComputerNames(dataDir, computerId);
  for (const pid of execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }
}
