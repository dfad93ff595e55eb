import { access, constants, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { PulumiToolchain } from '../../pulumi/toolchain.ts';
import { cgroupLayout } from './cgroups.ts';

/** Each tool the provider runs, with the Debian package that provides it. */
const TOOLS: Record<string, string> = {
  ip: 'iproute2',
  sshd: 'openssh-server',
  'ssh-keygen': 'openssh-client',
  useradd: 'passwd',
  userdel: 'passwd',
  runuser: 'util-linux',
  flock: 'util-linux',
  pkill: 'procps',
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
 * users, cgroups), iproute2, OpenSSH's sshd, the user tools, cgroups with cpu, memory and a
 * freezer, and the Pulumi CLI with the command plugin.
 */
export async function missingLocalPrerequisites(toolchain: PulumiToolchain): Promise<string[]> {
  const missing: string[] = [];
  if (process.platform !== 'linux') return ['Linux: the local provider uses network namespaces and cgroups'];
  if (process.getuid?.() !== 0) missing.push('root: run agentplane as root (the local provider creates users, network namespaces and cgroups)');
  for (const [tool, pkg] of Object.entries(TOOLS)) if (!(await onPath(tool))) missing.push(`${tool}: apt-get install ${pkg}`);
  const layout = cgroupLayout(await readFile('/proc/self/mounts', 'utf8'));
  if (!layout.usable) missing.push('cgroups with the cpu, memory and freezer controllers mounted (v1 or v2)');
  if (!toolchain.available) {
    missing.push(`the Pulumi CLI ${toolchain.version} with pulumi-resource-command: run \`bash scripts/pulumi-toolchain.sh\` (builds them from the Go module proxy, needs Go), then restart`);
  }
  return missing;
}
