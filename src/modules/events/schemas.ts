import { z } from 'zod';
import { BadRequest } from '../../lib/errors.ts';
import { organizationEventTypes } from './types.ts';

export { ComputerIdParams } from '../computers/schemas.ts';
export { SessionIdParams } from '../sessions/schemas.ts';

const EventId = z.string().regex(/^\d{1,19}$/, 'must be an event id (digits)');

export const StreamQuery = z.strictObject({
  lastEventId: EventId.optional().meta({
    description:
      'Resume after this event id, as the Last-Event-ID header does (for clients that cannot set headers; the header wins). 0 replays every retained event.',
  }),
});

export const OrganizationStreamQuery = StreamQuery.extend({
  types: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      const types = v
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean);
      const unknown = types.filter((t) => !(organizationEventTypes as string[]).includes(t));
      if (unknown.length) ctx.addIssue({ code: 'custom', message: `unknown event types ${unknown.join(', ')}; known: ${organizationEventTypes.join(', ')}` });
      return types;
    })
    .meta({ description: `Comma-separated event types to receive (default all): ${organizationEventTypes.join(', ')}` }),
});

/** The `data` of every server-sent event (its `event` field is the type, its `id` field the id). */
export const StreamedEventSchema = z
  .object({
    id: z.string().optional().meta({
      description:
        "Event id, for Last-Event-ID; absent on transient events, which are never stored or replayed: `session.delta` (model text as it streams, data `{type, text}`) and `session.tool_output` (a running command's output, data `{toolUseId, stream, seq, offset, text, truncated}`)",
    }),
    type: z.string(),
    organizationId: z.string(),
    sessionId: z.string().optional(),
    computerId: z.string().optional(),
    createdAt: z.string(),
    data: z.unknown(),
  })
  .meta({ id: 'StreamedEvent', description: 'One server-sent event, as JSON in its data field' });

/** The Last-Event-ID header, else the query's lastEventId; a malformed header is a 400 like the query's. */
export function resumePoint(header: string | undefined, query: string | undefined): bigint | undefined {
  const raw = header?.trim() || query;
  if (raw === undefined || raw === '') return undefined;
  const parsed = EventId.safeParse(raw);
  if (!parsed.success) {
    throw new BadRequest(`Invalid Last-Event-ID ${JSON.stringify(raw)}: send the id of the last event you received (digits)`, {
      metadata: { errors: [{ field: 'Last-Event-ID', message: 'must be an event id (digits)' }] },
    });
  }
  return BigInt(parsed.data);
}
