import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { processAlive } from '../../lib/process-alive.ts';

/** Who took a stack's lock, as Pulumi's "currently locked" error names it. */
export interface LockHolder {
  host: string;
  pid: number;
  /** When the lock was taken (the error gives whole seconds); absent from older CLIs' messages. */
  takenAt?: Date;
}

/** The holders a "the stack is currently locked by N lock(s)" error names: `…: created by user@host (pid N) at <RFC 3339>`. */
export function lockHoldersIn(text: string): LockHolder[] {
  if (!/the stack is currently locked/.test(text)) return [];
  // The CLI may name a lock more than once (its message and the operation's error both carry it).
  const named = new Set([...text.matchAll(/: created by \S+@(\S+ \(pid \d+\)(?: at \S+)?)/g)].map((m) => m[1]!));
  return [...named].map((holder) => {
    const [, host, pid, at] = /^(\S+) \(pid (\d+)\)(?: at (\S+))?$/.exec(holder)!;
    const takenAt = at ? new Date(at) : undefined;
    return { host: host!, pid: Number(pid), ...(takenAt && !Number.isNaN(takenAt.getTime()) ? { takenAt } : {}) };
  });
}

// The error gives the lock's time in whole seconds, and the process's start is known to a clock tick.
const CLOCK_SLACK_MS = 1_500;
// USER_HZ: the unit of /proc/<pid>/stat's start time; 100 on every architecture Linux runs Node on.
const TICKS_PER_SECOND = 100;

/**
 * Whether the process that took the lock may still run: on this machine, alive, and not a newer
 * process that was given the same PID after the holder died (PIDs are reused, 32768 of them by
 * default, so after a kill -9 a stale lock's PID can belong to any later process, which would
 * otherwise be waited for as if it held the lock).
 */
export async function lockHolderRuns(holder: LockHolder): Promise<boolean> {
  if (holder.host !== os.hostname() || !processAlive(holder.pid)) return false;
  if (!holder.takenAt) return true;
  const started = await processStartedAt(holder.pid);
  return started === undefined || started.getTime() <= holder.takenAt.getTime() + CLOCK_SLACK_MS;
}

/** When a process started, from Linux's /proc (undefined elsewhere, or once it is gone). */
async function processStartedAt(pid: number): Promise<Date | undefined> {
  try {
    const [stat, uptime] = await Promise.all([readFile(`/proc/${pid}/stat`, 'utf8'), readFile('/proc/uptime', 'utf8')]);
    // The fields after the command name, which may itself hold spaces and parentheses: the start time is the 22nd field.
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    const bootedAt = Date.now() - Number(uptime.split(' ')[0]) * 1000;
    return Number.isFinite(ticks) ? new Date(bootedAt + (ticks * 1000) / TICKS_PER_SECOND) : undefined;
  } catch {
    return undefined;
  }
}
