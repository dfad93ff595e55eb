import { z } from 'zod';
import { defineJobKind, type JobSchedule } from '../../jobs/job.ts';

/**
 * Resolves a program template's ref and, for a commit it has not seen, inserts the version and
 * previews it (track.ts). Serialized per template, so a push, the minute's run and an edit queue
 * behind one another; a retry after a kill finds the version and finishes its preview.
 */
export const templateTrackJob = defineJobKind({
  name: 'computer-templates.track',
  payload: z.object({ templateId: z.string().min(1) }),
  retryLimit: 2,
  retryDelaySeconds: 10,
  expireInSeconds: 900,
  serializeBy: (p) => p.templateId,
});

/** Every minute: a tracking run for each program template (resolving only, unless the ref moved). */
export const templateTrackDueJob = defineJobKind({
  name: 'computer-templates.track-due',
  payload: z.object({}),
  retryLimit: 0,
  expireInSeconds: 60,
});

export const templateSchedules: JobSchedule[] = [{ kind: templateTrackDueJob, cron: '* * * * *', payload: {} }];
