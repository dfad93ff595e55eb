import { existsSync } from 'node:fs';
import path from 'node:path';

/** Everything on the host that belongs to one local computer, derived from its id alone. */
export interface LocalNames {
  /** The computer's directory: `home/` (the user's home) and `sshd/`. */
  dir: string;
  home: string;
  /** Relative cgroup path, the same in every hierarchy. */
  cgroup: string;
  netns: string;
  /** Interface names are at most 15 characters. */
  vethHost: string;
  vethGuest: string;
  user: string;
}

export const CGROUP_PARENT = 'agentplane';

/** `cmp_` + 20 base36 characters, as `newId('cmp')` makes them. */
const COMPUTER_ID = /^cmp_([a-z0-9]{20})$/;

export function localNames(root: string, computerId: string): LocalNames {
  const match = COMPUTER_ID.exec(computerId);
  if (!match) throw new Error(`not a computer id: ${JSON.stringify(computerId)}`);
  const key = match[1]!;
  const dir = path.join(root, computerId);
  return {
    dir,
    home: path.join(dir, 'home'),
    cgroup: `${CGROUP_PARENT}/${computerId}`,
    netns: `ap-${key}`,
    vethHost: `aph${key.slice(0, 11)}`,
    vethGuest: `apg${key.slice(0, 11)}`,
    user: `ap-${key}`,
  };
}

/**
 * Where `local` computers live when AGENTPLANE_LOCAL_ROOT is not set: beside the data directory,
 * never in it (`./.agentplane` -> `./.agentplane-computers`), one root per installation.
 */
export function defaultLocalRoot(dataDir: string): string {
  return `${path.resolve(dataDir)}-computers`;
}

/** What computers may reach besides the API port: host ports, and IPv4 blocks through the host. */
export interface LocalAllow {
  ports: number[];
  nets: string[];
}

/**
 * The root a computer's directory is under: the legacy one (`<data dir>/computers`) for a computer
 * made there before AGENTPLANE_LOCAL_ROOT existed, which stays where it is; else the root.
 */
export function computerRoot(opts: { root: string; legacyRoot: string }, computerId: string): string {
  return opts.legacyRoot !== opts.root && existsSync(path.join(opts.legacyRoot, computerId)) ? opts.legacyRoot : opts.root;
}
