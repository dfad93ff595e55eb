import type { Event } from '../../generated/prisma/client.ts';
import type { SseEvent } from '../../http/sse.ts';

/** An event as streams and webhooks carry it. Transient events have no id. */
export interface WireEvent {
  id?: string;
  type: string;
  organizationId: string;
  sessionId?: string;
  computerId?: string;
  createdAt: string;
  data: unknown;
}

export function wireEvent(row: Event): WireEvent {
  return {
    id: row.id.toString(),
    type: row.type,
    organizationId: row.organizationId,
    ...(row.sessionId ? { sessionId: row.sessionId } : {}),
    ...(row.computerId ? { computerId: row.computerId } : {}),
    createdAt: row.createdAt.toISOString(),
    data: row.data,
  };
}

/** The SSE frame: the event's id (for Last-Event-ID), its type as the event name, itself as data. */
export function sseFrame(e: WireEvent): SseEvent {
  return { id: e.id, event: e.type, data: JSON.stringify(e) };
}
