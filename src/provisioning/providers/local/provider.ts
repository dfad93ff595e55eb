import { execFile } from 'node:child_process';
import { readFile, statfs } from 'node:fs/promises';
import os from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { local as Local } from '@pulumi/command';
import type { Input } from '@pulumi/pulumi';
import type { PulumiToolchain } from '../../pulumi/toolchain.ts';
import type { ComputerProgramInput, ComputerProgramOutputs, ManagedProvider, ProviderMetricSample } from '../types.ts';
import { cgroupLayout, readCgroup, type CgroupLayout } from './cgroups.ts';
import { sandboxLegacyComputers } from './legacy.ts';
import { computerRoot, localNames, type LocalAllow } from './names.ts';
import { missingLocalPrerequisites } from './prerequisites.ts';
import { SCRIPTS, scriptEnvironment, type ResourceScripts } from './scripts.ts';
import { parseSubnet } from './subnet.ts';

export const LOCAL_PROVIDER = 'local';
const SSH_PORT = 22;
const CPU_PERIOD_US = 100_000;
// CPU use is the difference of two readings of the cgroup's counter this far apart.
const CPU_WINDOW_MS = 500;
const AVAILABILITY_TTL_MS = 30_000;

export interface LocalProviderOptions {
  /** Computers' directories (homes, sshd files, their sandbox's /etc) live here (AGENTPLANE_LOCAL_ROOT). */
  root: string;
  /** Where computers made before AGENTPLANE_LOCAL_ROOT live (`<data dir>/computers`): they stay there. */
  legacyRoot: string;
  /** Address block of the computers, one /30 each, e.g. `10.231.0.0/16`. */
  subnet: string;
  /** What a computer may reach besides the control plane's API port (AGENTPLANE_LOCAL_ALLOW). */
  allow: LocalAllow;
  /** Processes and threads at once per computer. */
  pidsMax: number;
  /** The port the control plane's API listens on, the one port of the host a computer reaches. */
  apiPort: () => number;
  toolchain: PulumiToolchain;
}

/**
 * Managed computers on the control-plane host, each a sandbox: its own network namespace and
 * address behind per-computer nftables rules, unix user with a home under the computers' root,
 * sshd holding the computer's key inside bubblewrap's mount, PID, IPC and UTS namespaces, and
 * cgroup with its CPU, memory and process limits (frozen while paused). Each part is a `command:local:Command`
 * with a create and a delete script, so `pulumi destroy` undoes exactly what `pulumi up` did.
 */
export function createLocalProvider(opts: LocalProviderOptions): ManagedProvider {
  const subnet = parseSubnet(opts.subnet);
  let layout: Promise<CgroupLayout> | undefined;
  const cgroups = () => (layout ??= readFile('/proc/self/mounts', 'utf8').then(cgroupLayout));

  async function program(input: ComputerProgramInput): Promise<ComputerProgramOutputs> {
    // Imported inside the program (Pulumi's runtime is running by then), so that loading this
    // provider costs every CLI command nothing.
    const [{ local }, { all }] = await Promise.all([import('@pulumi/command'), import('@pulumi/pulumi')]);
    const common = scriptEnvironment(computerRoot(opts, input.computerId), input.computerId);
    const command = (name: string, scripts: ResourceScripts, environment: Input<Record<string, string>>, dependsOn: Local.Command[] = []) =>
      new local.Command(
        name,
        { create: scripts.create, update: scripts.update, delete: scripts.delete, interpreter: ['/bin/sh', '-c'], environment },
        { dependsOn },
      );

    const network = command('network', SCRIPTS.network, {
      ...common,
      SUBNET_BASE: String(subnet.base),
      SLOTS: String(subnet.slots),
      API_PORT: String(opts.apiPort()),
      ALLOW_PORTS: opts.allow.ports.join(' '),
      ALLOW_NETS: opts.allow.nets.join(' '),
    });
    const user = command('user', SCRIPTS.user, {
      ...common,
      AUTHORIZED_KEY: input.authorizedPublicKey,
      DISK_BYTES: String(input.resources.diskGiB * 2 ** 30),
    });
    const cgroup = command('cgroup', SCRIPTS.cgroup, {
      ...common,
      CPU_QUOTA_US: String(Math.max(1000, Math.round(input.resources.cpus * CPU_PERIOD_US))),
      MEMORY_BYTES: String(input.resources.memoryMiB * 2 ** 20),
      PIDS_MAX: String(opts.pidsMax),
    });
    const host = network.stdout.apply((out) => (JSON.parse(out) as { host: string }).host);
    const sshd = command(
      'sshd',
      SCRIPTS.sshd,
      host.apply((h) => ({ ...common, HOST: h })),
      [user, cgroup],
    );
    const power = command('power', SCRIPTS.power, { ...common, RUNNING: String(input.running) }, [sshd]);
    return {
      ssh: {
        host,
        port: SSH_PORT,
        user: user.stdout,
        // Through the power resource, so the outputs exist only once the computer is as asked.
        hostKey: all([sshd.stdout, power.stdout]).apply(([key]) => key),
      },
      pausable: true,
    };
  }

  async function sampleMetrics(computerId: string): Promise<ProviderMetricSample | undefined> {
    const n = localNames(computerRoot(opts, computerId), computerId);
    const layout = await cgroups();
    const first = await readCgroup(layout, n.cgroup);
    if (!first || first.frozen) return undefined;
    await delay(CPU_WINDOW_MS);
    const second = await readCgroup(layout, n.cgroup);
    if (!second || second.frozen) return undefined;
    const cpuCount = first.cpuLimit ?? os.availableParallelism();
    const usedCores = (second.cpuUsageUs - first.cpuUsageUs) / (CPU_WINDOW_MS * 1000);
    const disk = await diskUsage(n.home, n.dir);
    return {
      cpuUsedPct: Math.min(100, Math.max(0, (usedCores / cpuCount) * 100)),
      cpuCount: Math.ceil(cpuCount),
      memUsed: second.memUsed,
      memTotal: second.memLimit ?? os.totalmem(),
      ...disk,
    };
  }

  // Prerequisites change rarely; checking them on every create would cost a few hundred file checks each.
  let checked: { at: number; missing: Promise<string[]> } | undefined;
  const missingPrerequisites = () => {
    if (!checked || Date.now() - checked.at > AVAILABILITY_TTL_MS) {
      checked = { at: Date.now(), missing: missingLocalPrerequisites(opts.toolchain, opts.root) };
    }
    return checked.missing;
  };

  return {
    name: LOCAL_PROVIDER,
    missingPrerequisites,
    program,
    sampleMetrics,
    prepare: async (log) => {
      await sandboxLegacyComputers(opts.legacyRoot, log);
    },
  };
}

const exec = promisify(execFile);

/** Bytes under the home, against the advisory size the computer was given (else the file system's). */
async function diskUsage(home: string, dir: string): Promise<{ diskUsed: number; diskTotal: number }> {
  const { stdout } = await exec('du', ['-sb', home], { timeout: 20_000 }).catch(() => ({ stdout: '0' }));
  const used = Number(stdout.split('\t')[0]) || 0;
  const advisory = Number(await readFile(`${dir}/disk-bytes`, 'utf8').catch(() => ''));
  if (advisory > 0) return { diskUsed: used, diskTotal: advisory };
  const fs = await statfs(home);
  return { diskUsed: used, diskTotal: fs.blocks * fs.bsize };
}
