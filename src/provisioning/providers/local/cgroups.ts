import { readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Where a computer's cgroup counters are, on cgroup v2 (one tree with the controllers) or v1
 * (one hierarchy per controller; hybrid hosts mount an empty v2 tree beside them). The same
 * rule as the provider's shell (`lib.sh`).
 */
export type CgroupLayout =
  | { version: 2; root: string; usable: boolean }
  | { version: 1; mounts: Partial<Record<'cpu' | 'cpuacct' | 'memory' | 'freezer' | 'pids', string>>; usable: boolean };

export function cgroupLayout(procMounts: string): CgroupLayout {
  const lines = procMounts.split('\n').map((l) => l.split(' '));
  const v2 = lines.find((f) => f[2] === 'cgroup2' && f[1] === '/sys/fs/cgroup');
  if (v2) return { version: 2, root: '/sys/fs/cgroup', usable: true };
  const mounts: Extract<CgroupLayout, { version: 1 }>['mounts'] = {};
  for (const f of lines) {
    if (f[2] !== 'cgroup') continue;
    for (const option of (f[3] ?? '').split(',')) {
      if (option === 'cpu' || option === 'cpuacct' || option === 'memory' || option === 'freezer' || option === 'pids') mounts[option] ??= f[1]!;
    }
  }
  return { version: 1, mounts, usable: Boolean(mounts.cpu && mounts.cpuacct && mounts.memory && mounts.freezer && mounts.pids) };
}

export interface CgroupCounters {
  /** CPU time used since the cgroup was made, in microseconds. */
  cpuUsageUs: number;
  /** The CPU limit in cores (quota / period); undefined when unlimited. */
  cpuLimit?: number;
  memUsed: number;
  /** The memory limit in bytes; undefined when unlimited. */
  memLimit?: number;
  frozen: boolean;
}

const read = async (file: string) => (await readFile(file, 'utf8')).trim();
const limit = (text: string) => (text === 'max' || Number(text) >= 2 ** 60 ? undefined : Number(text));

/** The counters of one cgroup (relative path, e.g. `agentplane/cmp_...`), or undefined when it does not exist. */
export async function readCgroup(layout: CgroupLayout, cgroup: string): Promise<CgroupCounters | undefined> {
  try {
    if (layout.version === 2) {
      const dir = path.join(layout.root, cgroup);
      const stat = await read(path.join(dir, 'cpu.stat'));
      const usage = Number(/^usage_usec (\d+)$/m.exec(stat)?.[1] ?? 0);
      const [quota, period] = (await read(path.join(dir, 'cpu.max'))).split(' ');
      const events = await read(path.join(dir, 'cgroup.events'));
      return {
        cpuUsageUs: usage,
        cpuLimit: quota === 'max' ? undefined : Number(quota) / Number(period),
        memUsed: Number(await read(path.join(dir, 'memory.current'))),
        memLimit: limit(await read(path.join(dir, 'memory.max'))),
        frozen: /^frozen 1$/m.test(events),
      };
    }
    const at = (controller: keyof typeof layout.mounts, file: string) => path.join(layout.mounts[controller]!, cgroup, file);
    const quota = Number(await read(at('cpu', 'cpu.cfs_quota_us')));
    const period = Number(await read(at('cpu', 'cpu.cfs_period_us')));
    return {
      cpuUsageUs: Number(await read(at('cpuacct', 'cpuacct.usage'))) / 1000,
      cpuLimit: quota > 0 ? quota / period : undefined,
      memUsed: Number(await read(at('memory', 'memory.usage_in_bytes'))),
      memLimit: limit(await read(at('memory', 'memory.limit_in_bytes'))),
      frozen: (await read(at('freezer', 'freezer.state'))) !== 'THAWED',
    };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
