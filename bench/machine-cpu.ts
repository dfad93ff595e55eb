import fs from 'node:fs';

/** /proc/stat and /proc/<pid>/stat count CPU time in USER_HZ ticks: 100 a second on Linux. */
const TICK_MS = 10;

/** CPU time the whole machine has been busy (every core, every process, the kernel; not the hypervisor's steal), in ms. */
export function machineBusyMs(): number {
  const [, ...ticks] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user, nice, system, , , irq, softirq] = ticks.map(Number);
  return (user! + nice! + system! + irq! + softirq!) * TICK_MS;
}

/** CPU time (user + system) a process has used so far, in ms. */
export function processCpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

/** A process's resident memory now and at its peak (VmRSS, VmHWM), in MiB. */
export function processMemoryMiB(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}
