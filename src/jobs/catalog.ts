import type { JobDefinition } from './job.ts';

/**
 * Every background job the control plane runs. Modules add their definitions here; the server's
 * in-process worker and `agentplane worker` both work this list.
 */
export const allJobs: JobDefinition[] = [];
