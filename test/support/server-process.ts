import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
export const CLI = path.join(REPO_ROOT, 'bin/agentplane.js');

export interface ServerProcess {
  url: string;
  /** The owner API key printed on the first start of an empty database, if it was. */
  firstStartKey?: string;
  output(): string;
  child: ChildProcess;
  /** Sends the signal (to the whole group when started as one) and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `agentplane serve` (what `npm start` runs) as a real process on a free port and waits
 * until it logs that it is serving.
 */
export async function startServerProcess(env: Record<string, string>, opts: { command?: string[]; processGroup?: boolean } = {}): Promise<ServerProcess> {
  const [cmd, ...args] = opts.command ?? [process.execPath, CLI, 'serve'];
  const child = spawn(cmd!, args, {
    cwd: REPO_ROOT,
    // In its own process group, a signal can reach every process of it, as Ctrl-C in a terminal does.
    detached: opts.processGroup ?? false,
    // Free ports for the API and, with DATABASE_URL, the relay peer listener: test files run side by side.
    env: {
      ...process.env,
      PORT: '0',
      AGENTPLANE_HOST: '127.0.0.1',
      AGENTPLANE_RELAY_PEER_PORT: '0',
      AGENTPLANE_RELAY_PEER_HOST: '127.0.0.1',
      AGENTPLANE_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // A server that never said it is serving must not outlive the test that started it.
      child.kill('SIGKILL');
      reject(new Error(`server did not start in time:\n${out}`));
    }, 60_000);
    const check = () => {
      const m = /"url":"(http:\/\/[^"]+)".*"msg":"agentplane is serving"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before serving:\n${out}`));
    });
  });
  return {
    url,
    firstStartKey: /^\s+(apk_[0-9a-z]+)$/m.exec(out)?.[1],
    output: () => out,
    child,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) {
        // SIGKILL of a group is a container's end: everything the server started dies with it.
        if (opts.processGroup && signal === 'SIGKILL') await killSession(child.pid!);
        else if (opts.processGroup) process.kill(-child.pid!, signal);
        else child.kill(signal);
      }
      return exited;
    },
  };
}

/**
 * SIGKILLs every process of the session `leader` started (spawned `detached`, it leads one): the
 * Pulumi CLI puts each plugin in a process group of its own, so a signal to the leader's group
 * leaves them running after the test, orphaned. Listed again until none is left: a plugin the CLI
 * was forking as the first list was taken shows up in the next.
 */
export async function killSession(leader: number): Promise<void> {
  for (let round = 0; round < 20; round++) {
    const pids = spawnSync('ps', ['-o', 'pid=,stat=', '-s', String(leader)], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      // A zombie is dead already; its new parent reaps it.
      .filter(([pid, stat]) => pid && !stat?.startsWith('Z'))
      .map(([pid]) => Number(pid));
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (err) {
        // One that ended between the listing and the kill (a CLI run finishing) is gone already.
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    }
    await sleep(50);
  }
}
