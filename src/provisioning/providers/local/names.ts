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
