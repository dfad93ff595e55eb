import { z } from 'zod';
import { defineJobKind } from '../../jobs/job.ts';

/**
 * One agent turn of a session. Serialized per session: turns of one session never overlap. Every
 * added message sends one, and so does the decision (or expiry) that leaves a paused turn with no
 * approval pending; a run that finds nothing to do ends. A worker that dies mid-turn stops
 * heartbeating; after `heartbeatSeconds` the job runs again and continues the turn.
 */
export const sessionTurnJob = defineJobKind({
  name: 'sessions.turn',
  // `begun`: the message's own transaction began the turn (an idle session's): the first run starts it without one.
  payload: z.object({ sessionId: z.string().min(1), begun: z.boolean().optional() }),
  retryLimit: 2,
  retryDelaySeconds: 1,
  expireInSeconds: 3 * 3600,
  heartbeatSeconds: 10,
  // A turn is almost all waiting (model stream, tools): hundreds run side by side in one process.
  // The configured AGENTPLANE_TURN_CONCURRENCY replaces this default.
  concurrency: 64,
  ioBound: true,
  serializeBy: (p) => p.sessionId,
});

/** An approval nobody answered: sent with the request, due at its expiry. */
export const sessionApprovalExpireJob = defineJobKind({
  name: 'sessions.approval-expire',
  payload: z.object({ sessionId: z.string().min(1), toolUseId: z.string().min(1) }),
  retryLimit: 5,
  retryDelaySeconds: 5,
  expireInSeconds: 60,
});
