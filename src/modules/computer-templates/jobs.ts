import type { JobDefinition } from '../../jobs/job.ts';
import { templateTrackDueJob, templateTrackJob } from './job-kinds.ts';
import { sendDueTracking, trackTemplate, type TrackDeps } from './track.ts';

/** Program templates' tracking, bound to its kinds (job-kinds.ts). */
export function templateJobs(deps: TrackDeps): JobDefinition[] {
  return [
    templateTrackJob.handledBy((p, ctx) => trackTemplate(deps, p.templateId, ctx)),
    templateTrackDueJob.handledBy((_p, ctx) => sendDueTracking(deps, ctx.send)),
  ];
}
