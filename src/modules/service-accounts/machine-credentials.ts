import type { Computer } from '../../generated/prisma/client.ts';
import { eachConcurrently } from '../../lib/concurrency.ts';
import { writeGitCredentials } from '../../repos/git-credentials.ts';
import { BYOM, targetFor, type MachineDeps } from '../computers/machines.ts';

/** How long one machine may take before its purge counts as failed. */
const PURGE_TIMEOUT_MS = 15_000;
/** Machines purged at once. */
const PARALLEL_PURGES = 8;

export type PurgeOutcome = { computerId: string; outcome: 'purged' } | { computerId: string; outcome: 'failed'; error: string };

/**
 * Best effort, once a service account's delete has committed: removes the git credentials
 * `POST /computers/{id}/refresh` wrote onto each registered (byom) machine the account owned, so
 * the organization's source-control tokens do not outlive the account on machines agentplane no
 * longer manages. Managed computers need none: they are torn down. Up to PARALLEL_PURGES machines
 * at once, each for at most PURGE_TIMEOUT_MS; one that cannot be reached is reported, not retried.
 */
export async function purgeMachineGitCredentials(deps: MachineDeps, computers: Computer[]): Promise<PurgeOutcome[]> {
  const machines = computers.filter((c) => c.providerType === BYOM);
  const outcomes: PurgeOutcome[] = [];
  await eachConcurrently(machines, PARALLEL_PURGES, async (computer, index) => {
    const signal = AbortSignal.timeout(PURGE_TIMEOUT_MS);
    try {
      const target = await targetFor(deps, computer);
      await writeGitCredentials(deps.ssh, target, [], { signal });
      outcomes[index] = { computerId: computer.id, outcome: 'purged' };
    } catch (err) {
      outcomes[index] = { computerId: computer.id, outcome: 'failed', error: err instanceof Error ? err.message : String(err) };
    }
  });
  return outcomes;
}
