import { z } from 'zod';
import { defineJobKind } from '../../jobs/job.ts';

/**
 * Opens the pull requests of an automation's queued edits (declare.ts), oldest first. Serialized
 * per automation, so its edits never race over its recorded workflow files.
 */
export const ciQueuedEditsJob = defineJobKind({
  name: 'automations.queued-edits',
  payload: z.object({ automationId: z.string().min(1) }),
  retryLimit: 2,
  retryDelaySeconds: 30,
  expireInSeconds: 900,
  serializeBy: (p) => p.automationId,
});
