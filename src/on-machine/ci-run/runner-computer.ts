import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
  await Promise.race([ready, running.then(() => Promise.reject(new Error('the agent stopped before its tunnel was up')))]);
  const computer = await opts.call<{ id: string }>('GET', `/api/v0/computers/name/${encodeURIComponent(opts.name)}`);
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
