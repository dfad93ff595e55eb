import { execFile } from 'node:child_process';
import { access, constants, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import path from 'node:path';
import type { PulumiToolchain } from '../../pulumi/toolchain.ts';
import { cgroupLayout } from './cgroups.ts';
import { withLib } from './scripts.ts';

/** Each tool the provider runs, with the Debian package that provides it. */
const TOOLS: Record<string, string> = {
  ip: 'iproute2',
  sshd: 'openssh-server',
  'ssh-keygen': 'openssh-client',
  useradd: 'passwd',
  userdel: 'passwd',
  flock: 'util-linux',
  setsid: 'util-linux',
  pkill: 'procps',
  bwrap: 'bubblewrap',
  nft: 'nftables',
};
const SBIN = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

async function executable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function onPath(tool: string): Promise<boolean> {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), ...SBIN];
  for (const dir of dirs) if (await executable(path.join(dir, tool))) return true;
  return false;
}

/**
 * What keeps the local provider from working here, or an empty list: root (network namespaces,
 * users, cgroups), iproute2, OpenSSH's sshd, the user tools, bubblewrap and nftables that work on
 * this kernel, cgroups with cpu, memory, pids and a freezer, and the Pulumi CLI with the command plugin.
 */
export async function missingLocalPrerequisites(toolchain: PulumiToolchain, root = '/'): Promise<string[]> {
  const missing: string[] = [];
  // The sandbox's mounts are written word by word (scripts/sshd.sh).
  if (/\s/.test(root)) missing.push(`a computers' root without white space: ${JSON.stringify(root)} (set AGENTPLANE_LOCAL_ROOT)`);
  if (process.platform !== 'linux') return ['Linux: the local provider uses network namespaces and cgroups'];
  if (process.getuid?.() !== 0) missing.push('root: run agentplane as root (the local provider creates users, network namespaces and cgroups)');
  for (const [tool, pkg] of Object.entries(TOOLS)) if (!(await onPath(tool))) missing.push(`${tool}: apt-get install ${pkg}`);
  const layout = cgroupLayout(await readFile('/proc/self/mounts', 'utf8'));
  if (!layout.usable) missing.push('cgroups with the cpu, memory, pids and freezer controllers mounted (v1 or v2)');
  if (missing.length === 0) missing.push(...(await kernelFeatures()));
  if (!toolchain.available) {
    missing.push(
      `the Pulumi CLI ${toolchain.version} with pulumi-resource-command: run \`bash scripts/pulumi-toolchain.sh\` (builds them from the Go module proxy, needs Go), then restart`,
    );
  }
  return missing;
}

const run = promisify(execFile);

/** The first lines a failed probe printed, for the message. */
const said = (err: unknown) =>
  String((err as { stderr?: string }).stderr || (err as Error).message)
    .trim()
    .split('\n')
    .slice(0, 2)
    .join('; ');

/**
 * The kernel features the sandbox uses, tried the way the scripts use them: bubblewrap's mount,
 * PID, IPC and UTS namespaces (hosts that forbid them say so here), and nftables.
 */
async function kernelFeatures(): Promise<string[]> {
  const missing: string[] = [];
  // In a session of its own: bwrap's namespace leaves a process for PID 1 to reap, which some hosts'
  // PID 1 never does; a zombie left in the server's process group would outlive its stop.
  // The host's system directories as the sandbox binds them (lib.sh's system_dirs), in a session of
  // its own: bwrap's namespace leaves a process for PID 1 to reap, which some hosts' PID 1 never
  // does; a zombie left in the server's process group would outlive its stop.
  const probe = withLib(
    'exec setsid --wait bwrap --unshare-pid --unshare-ipc --unshare-uts --ro-bind /usr /usr $(system_dirs) --proc /proc --dev /dev /usr/bin/true',
  );
  await run('/bin/sh', ['-c', probe], { timeout: 10_000 }).catch((err) =>
    missing.push(
      `namespaces for bubblewrap's sandbox (mount, PID, IPC, UTS): \`bwrap\` failed (${said(err)}); a kernel built with them, and no policy that forbids them to root (e.g. a container without CAP_SYS_ADMIN)`,
    ),
  );
  await run('nft', ['list', 'tables'], { timeout: 10_000 }).catch((err) =>
    missing.push(`nftables in the kernel: \`nft list tables\` failed (${said(err)}); load the nf_tables module (modprobe nf_tables)`),
  );
  return missing;
}
