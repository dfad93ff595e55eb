import type { JobDefinition } from '../../jobs/job.ts';
import type { AutomationsDeps } from './deps.ts';
import { ciQueuedEditsJob } from './job-kinds.ts';
import { runQueuedEdits } from './queued-edits.ts';

/** CI automations' background work, bound to its kinds (job-kinds.ts). */
export function automationJobs(deps: Omit<AutomationsDeps, 'wiki'>): JobDefinition[] {
  return [ciQueuedEditsJob.handledBy((p) => runQueuedEdits(deps, p.automationId))];
}
