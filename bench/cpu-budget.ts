import fs from 'node:fs';
import path from 'node:path';

/** The kernel's scheduling period for a CPU quota: a budget of `cores` is cores × this much CPU time per period. */
const PERIOD_US = 100_000;

/**
 * Gives a process (and the children it starts later) a CPU budget of its own, as a container's CPU
 * limit does: `cores` of CPU time per scheduling period, enforced by the kernel's CFS quota in a
 * cgroup made for it (cgroup v2's `cpu.max`, or v1's `cpu.cfs_quota_us`). Needs root. `release`
 * moves the process back and removes the cgroup; a process that has exited leaves it empty.
 */
export function limitCpu(pid: number, cores: number, name: string): { release(): void } {
  const v2 = fs.existsSync('/sys/fs/cgroup/cgroup.controllers');
  const root = v2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/cpu';
  if (!fs.existsSync(root)) throw new Error(`no cpu cgroup controller at ${root}: a CPU budget needs one`);
  if (v2) {
    const enabled = fs.readFileSync(path.join(root, 'cgroup.subtree_control'), 'utf8');
    if (!/\bcpu\b/.test(enabled)) fs.writeFileSync(path.join(root, 'cgroup.subtree_control'), '+cpu');
  }
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  const quota = Math.round(cores * PERIOD_US);
  if (v2) fs.writeFileSync(path.join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
  else {
    fs.writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
    fs.writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(quota));
  }
  fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
  return {
    release() {
      for (const p of fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
        try {
          fs.writeFileSync(path.join(root, 'cgroup.procs'), p);
        } catch {
          // exited meanwhile
        }
      }
      fs.rmdirSync(dir);
    },
  };
}
