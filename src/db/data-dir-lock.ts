import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { processAlive } from '../lib/process-alive.ts';

/** Held while this process uses an embedded data directory; `release` lets the next process in. */
export interface DataDirLock {
  readonly file: string;
  release(): void;
}

/** Another process holds the data directory: a second writer would corrupt the embedded database. */
class DataDirInUse extends Error {
  constructor(dir: string, pid: string | undefined) {
    super(
      `the data directory ${dir} is in use by another agentplane process${pid ? ` (PID ${pid})` : ''}; ` +
        'stop that server first, or use DATABASE_URL (PostgreSQL) to run several processes on one database',
    );
    this.name = 'DataDirInUse';
  }
}

export const LOCK_FILE = 'agentplane.lock';

/**
 * Takes an exclusive flock(2) on `<dir>/agentplane.lock`, the way PostgreSQL's postmaster.pid
 * guards its directory. The lock belongs to the file descriptor this process keeps open, so the
 * kernel drops it when the process ends in any way, kill -9 included: no stale lock survives.
 * Node has no flock of its own; util-linux's `flock` takes it on our descriptor, which it shares,
 * and exits. Where `flock` is missing (not Linux), the PID written in the file is checked instead.
 */
export function lockDataDirectory(dir: string): DataDirLock {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, LOCK_FILE);
  const fd = fs.openSync(file, 'a+');
  const holder = () => fs.readFileSync(file, 'utf8').split('\n')[0]?.trim() || undefined;
  const res = spawnSync('flock', ['--exclusive', '--nonblock', '3'], { stdio: ['ignore', 'ignore', 'pipe', fd] });
  if (res.error && (res.error as NodeJS.ErrnoException).code === 'ENOENT') {
    const pid = Number(holder());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) {
      fs.closeSync(fd);
      throw new DataDirInUse(dir, String(pid));
    }
  } else if (res.status !== 0) {
    const pid = holder();
    fs.closeSync(fd);
    if (res.status === 1) throw new DataDirInUse(dir, pid);
    throw new Error(`could not lock the data directory ${dir}: ${res.error?.message ?? res.stderr.toString().trim()}`);
  }
  fs.ftruncateSync(fd, 0);
  fs.writeSync(fd, `${process.pid}\n`);
  let released = false;
  return {
    file,
    release() {
      if (released) return;
      released = true;
      fs.ftruncateSync(fd, 0);
      fs.closeSync(fd);
    },
  };
}
