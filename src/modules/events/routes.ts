import { managerOrHigher, sessionsEnabled } from '../../auth/guards.ts';
import { defineRoute, type RouteSpec } from '../../http/route.ts';
import { ComputerIdParams, OrganizationStreamQuery, resumePoint, SessionIdParams, StreamedEventSchema, StreamQuery } from './schemas.ts';
import type { EventsService } from './service.ts';

const STREAM = {
  description:
    'A text/event-stream of events: each has an `id` (send it back as Last-Event-ID to resume), its type as `event`, and the event as JSON `data`; comments every few seconds keep the stream open',
  schema: StreamedEventSchema,
  eventStream: true,
};
const RESUME = ' Resumes after the Last-Event-ID header (or `lastEventId`) within the retention window; an older id first receives `stream.events_dropped`.';

/** Live events (an agentplane extension): server-sent event streams with the resources' own access rules. */
export function eventRoutes(service: EventsService, opts: { sessionsOrgs: '*' | ReadonlySet<string> }): RouteSpec[] {
  return [
    defineRoute({
      tags: ['Sessions'],
      guards: [sessionsEnabled(opts.sessionsOrgs)],
      method: 'get',
      path: '/api/v0/sessions/{sessionId}/events',
      operationId: 'streamSessionEvents',
      summary: `Streams a session's messages as they are created and updated (model text as it streams, tool calls, a running command's output in bounded chunks, and results), status, usage and interrupts. Without a resume point, a turn under way is replayed from its start.${RESUME}`,
      params: SessionIdParams,
      query: StreamQuery,
      responses: { 200: STREAM },
      errors: [400, 401, 403, 404, 500],
      handler: async ({ principal, params, query, header, stillAuthorized }) => {
        const open = await service.session(principal, params.sessionId, resumePoint(header('last-event-id'), query.lastEventId));
        return { status: 200, eventStream: (sink) => open(sink, stillAuthorized) };
      },
    }),
    defineRoute({
      tags: ['Computers'],
      method: 'get',
      path: '/api/v0/computers/{computerId}/events',
      operationId: 'streamComputerEvents',
      summary: `Streams a computer's status, each provisioning step as it starts and ends, power state and teardown. Without a resume point, a computer still being set up replays its events from the start.${RESUME}`,
      params: ComputerIdParams,
      query: StreamQuery,
      responses: { 200: STREAM },
      errors: [400, 401, 403, 404, 500],
      handler: async ({ principal, params, query, header, stillAuthorized }) => {
        const open = await service.computer(principal, params.computerId, resumePoint(header('last-event-id'), query.lastEventId));
        return { status: 200, eventStream: (sink) => open(sink, stillAuthorized) };
      },
    }),
    defineRoute({
      tags: ['Events'],
      guards: [managerOrHigher],
      method: 'get',
      path: '/api/v0/events',
      operationId: 'streamOrganizationEvents',
      summary: `Streams the organization's events (the types webhooks subscribe to), optionally filtered by type. Managers and owners.${RESUME}`,
      query: OrganizationStreamQuery,
      responses: { 200: STREAM },
      errors: [400, 401, 403, 500],
      handler: async ({ principal, query, header, stillAuthorized }) => {
        const open = service.organization(principal, query.types, resumePoint(header('last-event-id'), query.lastEventId));
        return { status: 200, eventStream: (sink) => open(sink, stillAuthorized) };
      },
    }),
  ];
}
