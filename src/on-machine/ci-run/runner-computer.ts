import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { runAgent } from '../machine-agent/agent.ts';
import type { ApiCall } from './client.ts';

/**
 * The CI runner itself as a byom computer for the job's duration: `agentplane agent` in this
 * process (registration, then the outbound tunnel), removed again by `release`.
 */
export async function registerRunner(opts: { url: string; apiKey: string; name: string; call: ApiCall; log(line: string): void }) {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-ci-runner-'));
  const stop = new AbortController();
  let connected!: () => void;
  const ready = new Promise<void>((resolve) => (connected = resolve));
  // A job's computer is the job's, not the machine's: its own host id (kept in the job's state
  // directory), so concurrent jobs on one runner, or a runner host registered as a computer too,
  // do not collide on the machine id.
  const running = runAgent(
    { url: opts.url, apiKey: opts.apiKey, name: opts.name, stateDir, log: opts.log, machineIdFiles: [], tunnel: { onConnected: () => connected() } },
    stop.signal,
  );
  const stopped = running.then(() => Promise.reject(new Error('the agent stopped before its tunnel was up')));
  await Promise.race([ready, stopped]);
  // The computer turns active once the control plane has reached it through the tunnel.
  const computer = await Promise.race([untilActive(opts), stopped]);
  return {
    computerId: computer.id,
    async release() {
      try {
        await opts.call('DELETE', `/api/v0/computers/${computer.id}`);
      } finally {
        stop.abort();
        await running.catch(() => undefined);
        fs.rmSync(stateDir, { recursive: true, force: true });
      }
    },
  };
}

const ACTIVE_WAIT_MS = 120_000;

async function untilActive(opts: { name: string; call: ApiCall }): Promise<{ id: string }> {
  const deadline = Date.now() + ACTIVE_WAIT_MS;
  for (;;) {
    const computer = await opts.call<{ id: string; status: string }>('GET', `/api/v0/computers/name/${encodeURIComponent(opts.name)}`);
    if (computer.status === 'active') return computer;
    if (computer.status !== 'provisioning' || Date.now() > deadline) {
      throw new Error(`the runner's computer ${opts.name} is ${computer.status}, not active; its provisioning steps say why`);
    }
    await sleep(250);
  }
}
