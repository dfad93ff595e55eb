import { readFileSync } from 'node:fs';
import { localNames } from './names.ts';

const read = (name: string) => readFileSync(new URL(`./scripts/${name}.sh`, import.meta.url), 'utf8');
const lib = read('lib');

export interface ResourceScripts {
  /** First create: a failure undoes what the script did, so nothing untracked is left behind. */
  create: string;
  /** Re-run on a changed input or to adopt what an interrupted create left: never undoes. */
  update: string;
  delete: string;
}

/**
 * The shell of one resource, self-contained: the text is stored in the stack's state, so the
 * delete that runs at `pulumi destroy` is the one that matched the create, whatever the
 * installed version of agentplane is by then.
 */
function resource(name: string): ResourceScripts {
  const body = `${lib}\n${read(name)}\n`;
  return {
    create: `${body}trap 'status=$?; if [ "$status" -ne 0 ]; then (set +e; delete) >/dev/null 2>&1; fi; exit "$status"' EXIT\ncreate\n`,
    update: `${body}create\n`,
    delete: `${body}delete\n`,
  };
}

export const SCRIPTS = {
  network: resource('network'),
  user: resource('user'),
  cgroup: resource('cgroup'),
  sshd: resource('sshd'),
  power: resource('power'),
};

/** A few commands with the shared functions of every script (lib.sh) defined. */
export function withLib(commands: string): string {
  return `${lib}\n${commands}\n`;
}

/** The variables every script of a computer reads: its id and the host names derived from it. */
export function scriptEnvironment(root: string, computerId: string): Record<string, string> {
  const n = localNames(root, computerId);
  return {
    ID: computerId,
    ROOT: root,
    DIR: n.dir,
    CG: n.cgroup,
    NS: n.netns,
    VETH_HOST: n.vethHost,
    VETH_GUEST: n.vethGuest,
    USER_NAME: n.user,
  };
}
