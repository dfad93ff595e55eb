import type { Db } from '../../db/client.ts';
import type { SessionMessage, SessionStatus } from '../../generated/prisma/client.ts';
import { publish, publishTransient } from '../events/publish.ts';
import type { ModelDelta } from './runtime/index.ts';
import type { TokenUsage } from './schemas.ts';
import { messageView } from './views.ts';

/** How a turn ended, as the organization's events say it. */
export type TurnOutcome = 'completed' | 'failed' | 'interrupted';

const OUTCOME_EVENT = { completed: 'session.idle', failed: 'session.failed', interrupted: 'session.interrupted' } as const;

/** The events a session's changes publish, each in the transaction of the change it describes. */
export const sessionEvents = {
  messageCreated: (db: Db, row: SessionMessage) =>
    publish(db, { type: 'session.message.created', sessionId: row.sessionId, data: { message: messageView(row) } }),

  messageUpdated: (db: Db, rows: SessionMessage[]) =>
    publish(db, rows.map((row) => ({ type: 'session.message.updated' as const, sessionId: row.sessionId, data: { message: messageView(row) } }))),

  status: (db: Db, sessionId: string, status: SessionStatus) => publish(db, { type: 'session.status', sessionId, data: { status } }),

  interruptRequested: (db: Db, sessionId: string) => publish(db, { type: 'session.interrupt_requested', sessionId, data: {} }),

  /**
   * A turn's end: the new status, and one organization event for the outcome (a completed turn
   * only when the session is idle; with messages queued the next turn is already pending).
   */
  turnEnded: (db: Db, sessionId: string, status: SessionStatus, outcome: TurnOutcome, error?: string) =>
    publish(db, [
      { type: 'session.status', sessionId, data: { status } },
      ...(outcome !== 'completed' || status === 'idle'
        ? [{ type: OUTCOME_EVENT[outcome], sessionId, data: { sessionId, status, ...(error ? { error } : {}) } }]
        : []),
    ]),

  /** One model call's usage, with the credits it cost. */
  usage: (db: Db, sessionId: string, usage: Partial<TokenUsage>) => publish(db, { type: 'session.usage', sessionId, data: { usage } }),
};

/** Model output as it streams, in bounded chunks, flushed at most every `intervalMs`. */
export interface DeltaStream {
  push(delta: ModelDelta): void;
  /** Sends what is buffered; awaited before the message it belongs to is stored, so deltas come first. */
  flush(): Promise<void>;
}

const CHUNK_CHARS = 1_000;

/**
 * Streams model deltas to connected clients as transient events. Deltas are coalesced (one
 * notification per `intervalMs` at most, each at most CHUNK_CHARS characters), so a fast model
 * costs a few notifications a second rather than one per token. A failed send is dropped: the
 * stored message carries the whole text.
 */
export function sessionDeltas(db: Db, session: { id: string; organizationId: string }, intervalMs = 25): DeltaStream {
  let kind: 'text' | 'thinking' = 'text';
  let buffer = '';
  let timer: NodeJS.Timeout | undefined;
  let sending: Promise<void> = Promise.resolve();

  const send = () => {
    clearTimeout(timer);
    timer = undefined;
    const chunks: string[] = [];
    for (let i = 0; i < buffer.length; i += CHUNK_CHARS) chunks.push(buffer.slice(i, i + CHUNK_CHARS));
    const type = kind;
    buffer = '';
    sending = sending.then(async () => {
      for (const text of chunks) {
        await publishTransient(db, { type: 'session.delta', organizationId: session.organizationId, sessionId: session.id, data: { type, text } }).catch(
          () => {},
        );
      }
    });
    return sending;
  };

  return {
    push(delta) {
      if (delta.type !== kind && buffer) void send();
      kind = delta.type;
      buffer += delta.type === 'text' ? delta.text : delta.thinking;
      timer ??= setTimeout(send, intervalMs);
    },
    flush: () => (buffer ? send() : sending),
  };
}
