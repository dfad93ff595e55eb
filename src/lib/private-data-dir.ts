import fs from 'node:fs';
import path from 'node:path';

/** The data directory's folder of `local` computers made before AGENTPLANE_LOCAL_ROOT: their users' files. */
const LEGACY_COMPUTERS_DIR = 'computers';

/**
 * Makes the data directory the control plane's alone, and keeps what it writes from now on so:
 * the process's umask becomes 077 (new files 0600, new folders 0700), the directory itself 0700,
 * and what an earlier version left there is tightened the same way (folders 0700, files 0600, or
 * 0700 where they were executable). Inside the folder of legacy `local` computers only that folder
 * is tightened: its contents belong to the computers' users, whose sandboxes bind their homes.
 * Returns how many entries were changed. Symbolic links are left as they are.
 */
export function makeDataDirPrivate(dataDir: string): number {
  process.umask(0o077);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  let changed = 0;
  const tighten = (file: string, stat: fs.Stats) => {
    const mode = stat.mode & 0o7777;
    const wanted = stat.isDirectory() || mode & 0o100 ? 0o700 : 0o600;
    if (mode !== wanted) {
      fs.chmodSync(file, wanted);
      changed++;
    }
  };
  const walk = (dir: string, top: boolean) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isSymbolicLink()) continue;
      const stat = fs.lstatSync(file, { throwIfNoEntry: false });
      if (!stat) continue;
      tighten(file, stat);
      if (entry.isDirectory() && !(top && entry.name === LEGACY_COMPUTERS_DIR)) walk(file, false);
    }
  };
  tighten(dataDir, fs.statSync(dataDir));
  walk(dataDir, true);
  return changed;
}
