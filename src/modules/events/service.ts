import type { Principal } from '../../auth/principal.ts';
import type { PrismaClient } from '../../db/client.ts';
import type { EventSink } from '../../http/sse.ts';
import { reachableComputer } from '../computers/access.ts';
import { reachableSession } from '../sessions/access.ts';
import type { EventHub } from './hub.ts';
import { runEventStream, type StreamScope, type StreamSettings } from './stream.ts';
import { organizationEventTypes } from './types.ts';

export interface EventsDeps {
  db: PrismaClient;
  hub: EventHub;
  settings: StreamSettings;
}

/** Starts a checked stream on an open sink; errors after the headers only end the stream. */
export type OpenStream = (sink: EventSink, stillAuthorized: () => Promise<boolean>) => void;

const TURN_ENDS = ['session.idle', 'session.failed', 'session.interrupted'];

export function createEventsService(deps: EventsDeps) {
  const open =
    (scope: StreamScope, after: bigint | undefined, stillReachable: () => Promise<unknown>): OpenStream =>
    (sink, stillAuthorized) => {
      const stillAllowed = async () =>
        (await stillAuthorized()) &&
        (await stillReachable().then(
          () => true,
          () => false,
        ));
      // A stream that fails (the database went away) ends; its client reconnects with its Last-Event-ID.
      runEventStream(deps, sink, scope, after, stillAllowed).catch(() => sink.close());
    };

  return {
    /**
     * A session's stream. Without a resume point, a client that connects mid-turn first receives
     * the turn so far: everything after the previous turn's end.
     */
    async session(principal: Principal, sessionId: string, after: bigint | undefined): Promise<OpenStream> {
      const session = await reachableSession(deps.db, principal, sessionId);
      if (after === undefined && session.status !== 'idle') {
        const ended = await deps.db.event.findFirst({ where: { sessionId, type: { in: TURN_ENDS } }, orderBy: { id: 'desc' }, select: { id: true } });
        after = ended?.id ?? 0n;
      }
      return open({ key: `session:${sessionId}`, where: { sessionId } }, after, () => reachableSession(deps.db, principal, sessionId));
    },

    /**
     * A computer's stream. Without a resume point, a computer still being set up first replays
     * every retained event of its own, so a client that connects after creating it sees each step.
     */
    async computer(principal: Principal, computerId: string, after: bigint | undefined): Promise<OpenStream> {
      const computer = await reachableComputer(deps.db, principal, computerId);
      if (after === undefined) {
        const unsettled =
          computer.status === 'provisioning' || (await deps.db.provisioningStep.count({ where: { computerId, status: { in: ['pending', 'running'] } } })) > 0;
        if (unsettled) after = 0n;
      }
      return open({ key: `computer:${computerId}`, where: { computerId } }, after, () => reachableComputer(deps.db, principal, computerId));
    },

    /** The organization's events (section 2 of the issue), optionally of some types only. */
    organization(principal: Principal, types: string[] | undefined, after: bigint | undefined): OpenStream {
      const wanted = new Set(types?.length ? types : organizationEventTypes);
      return open(
        {
          key: `org:${principal.organizationId}`,
          where: { organizationId: principal.organizationId, type: { in: [...wanted] } },
          accepts: (e) => wanted.has(e.type),
        },
        after,
        async () => {},
      );
    },
  };
}

export type EventsService = ReturnType<typeof createEventsService>;
