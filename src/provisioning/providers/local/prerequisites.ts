import { access, constants, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { PulumiToolchain } from '../../pulumi/toolchain.ts';
import { cgroupLayout } from './cgroups.ts';

const TOOLS = ['ip', 'sshd', 'ssh-keygen', 'useradd', 'userdel', 'runuser', 'flock', 'pkill'];
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
  if (process.platform !== 'linux') return ['Linux'];
  if (process.getuid?.() !== 0) missing.push('root');
  for (const tool of TOOLS) if (!(await onPath(tool))) missing.push(tool);
  const layout = cgroupLayout(await readFile('/proc/self/mounts', 'utf8'));
  if (!layout.usable) missing.push('cgroups with cpu, memory and freezer controllers');
  if (!toolchain.available) missing.push(`Pulumi CLI ${toolchain.version} with pulumi-resource-command (scripts/pulumi-toolchain.sh)`);
  return missing;
}
