import type { Db } from '../../db/client.ts';
import type { SessionMessage, SessionStatus } from '../../generated/prisma/client.ts';
import { publish, publishTransient, type NewEvent } from '../events/publish.ts';
import { MAX_TOOL_OUTPUT_CHARS, type ModelDelta, type OutputStream } from '../../agent/index.ts';
import type { TokenUsage } from './schemas.ts';
import { messageView } from './views.ts';

/** How a turn ended, as the organization's events say it. */
export type TurnOutcome = 'completed' | 'failed' | 'interrupted';

const OUTCOME_EVENT = { completed: 'session.idle', failed: 'session.failed', interrupted: 'session.interrupted' } as const;

/** Events of a session's changes, for a caller that publishes them with others in one statement. */
export const sessionEvent = {
  messageCreated: (row: SessionMessage): NewEvent => ({ type: 'session.message.created', sessionId: row.sessionId, data: { message: messageView(row) } }),

  messageUpdated: (rows: SessionMessage[]): NewEvent[] =>
    rows.map((row) => ({ type: 'session.message.updated', sessionId: row.sessionId, data: { message: messageView(row) } })),

  /** One model call's usage, with the credits it cost. */
  usage: (sessionId: string, usage: Partial<TokenUsage>): NewEvent => ({ type: 'session.usage', sessionId, data: { usage } }),

  status: (sessionId: string, status: SessionStatus): NewEvent => ({ type: 'session.status', sessionId, data: { status } }),
};

/** The events a session's changes publish, each in the transaction of the change it describes. */
export const sessionEvents = {
  status: (db: Db, sessionId: string, status: SessionStatus) => publish(db, sessionEvent.status(sessionId, status)),

  interruptRequested: (db: Db, sessionId: string) => publish(db, { type: 'session.interrupt_requested', sessionId, data: {} }),

  /**
   * A turn's end: the new status, and one organization event for the outcome (a completed turn
   * only when the session is idle; with messages queued the next turn is already pending).
   */
  turnEnded: (db: Db, sessionId: string, status: SessionStatus, outcome: TurnOutcome, error?: string) =>
    publish(db, [
      sessionEvent.status(sessionId, status),
      ...(outcome !== 'completed' || status === 'idle'
        ? [{ type: OUTCOME_EVENT[outcome], sessionId, data: { sessionId, status, ...(error ? { error } : {}) } }]
        : []),
    ]),
};

/** Model output as it streams, in bounded chunks, flushed at most every `intervalMs`. */
export interface DeltaStream {
  push(delta: ModelDelta): void;
  /** Sends what is buffered; awaited before the message it belongs to is stored, so deltas come first. */
  flush(): Promise<void>;
}

/**
 * Characters per transient event: under NOTIFY's limit (TRANSIENT_MAX_BYTES) even when every
 * character needs a six-byte JSON escape.
 */
export const CHUNK_CHARS = 1_000;

/** `text` in pieces of at most `size` UTF-16 units, never splitting a surrogate pair. */
export function splitChunks(text: string, size = CHUNK_CHARS): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    let end = Math.min(i + size, text.length);
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

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
    const chunks = splitChunks(buffer);
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

/** A running tool call's output as it arrives, in bounded chunks (see sessionToolOutput). */
export interface ToolOutputStream {
  push(toolUseId: string, stream: OutputStream, text: string): void;
  /** Sends what is buffered; awaited before the tool message is stored, so chunks come before the result. */
  flush(): Promise<void>;
}

/** Characters of one tool call's output streamed live, stdout and stderr together: the cap its result has for the model. */
export const TOOL_OUTPUT_LIVE_MAX_CHARS = MAX_TOOL_OUTPUT_CHARS;
/** Live output is coalesced over this interval: a chatty command costs at most ten events a second (plus full chunks). */
const TOOL_OUTPUT_INTERVAL_MS = 100;

/** What a `session.tool_output` event carries (docs/api-decisions.md, "Live events (#20)"). */
interface ToolOutputChunk {
  toolUseId: string;
  stream: OutputStream;
  /** 0, 1, 2, ... per tool call over both streams: a client sees a gap, or that it joined late. */
  seq: number;
  /** Characters of this stream streamed before this chunk. */
  offset: number;
  text: string;
  /** On the call's last event when its output passed TOOL_OUTPUT_LIVE_MAX_CHARS: nothing more is streamed; the result carries the tail. */
  truncated: boolean;
}

/**
 * Streams running tool calls' output to connected clients as transient `session.tool_output`
 * events: coalesced over `intervalMs` (adjacent output of one call and stream is joined), cut
 * into chunks of at most CHUNK_CHARS characters, and at most TOOL_OUTPUT_LIVE_MAX_CHARS per tool
 * call, after which the call's last event says `truncated` and the rest is not streamed. A failed
 * send is dropped: the stored tool result is what counts.
 */
export function sessionToolOutput(db: Db, session: { id: string; organizationId: string }, intervalMs = TOOL_OUTPUT_INTERVAL_MS): ToolOutputStream {
  const calls = new Map<string, { seq: number; offset: Record<OutputStream, number>; taken: number; truncated: boolean }>();
  let pending: { toolUseId: string; stream: OutputStream; text: string; truncated: boolean }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let sending: Promise<void> = Promise.resolve();

  const send = () => {
    clearTimeout(timer);
    timer = undefined;
    const events: ToolOutputChunk[] = [];
    for (const segment of pending) {
      const call = calls.get(segment.toolUseId)!;
      const pieces = segment.text ? splitChunks(segment.text) : [''];
      pieces.forEach((text, i) => {
        events.push({
          toolUseId: segment.toolUseId,
          stream: segment.stream,
          seq: call.seq++,
          offset: call.offset[segment.stream],
          text,
          truncated: segment.truncated && i === pieces.length - 1,
        });
        call.offset[segment.stream] += text.length;
      });
    }
    pending = [];
    // One statement per flush: a command's 30 chunks cost one round trip, not 30.
    const batch = events.map((data) => ({
      type: 'session.tool_output' as const,
      organizationId: session.organizationId,
      sessionId: session.id,
      data: { ...data },
    }));
    sending = sending.then(() => publishTransient(db, batch).catch(() => {}));
    return sending;
  };

  return {
    push(toolUseId, stream, text) {
      let call = calls.get(toolUseId);
      if (!call) calls.set(toolUseId, (call = { seq: 0, offset: { stdout: 0, stderr: 0 }, taken: 0, truncated: false }));
      if (!text || call.truncated) return;
      let piece = text;
      const room = TOOL_OUTPUT_LIVE_MAX_CHARS - call.taken;
      if (text.length > room) {
        piece = splitChunks(text, Math.max(room, 1))[0]!.slice(0, room);
        call.truncated = true;
      }
      call.taken += piece.length;
      const last = pending.at(-1);
      if (last && last.toolUseId === toolUseId && last.stream === stream) {
        last.text += piece;
        last.truncated = call.truncated;
      } else {
        pending.push({ toolUseId, stream, text: piece, truncated: call.truncated });
      }
      timer ??= setTimeout(send, intervalMs);
    },
    flush: () => (pending.length ? send() : sending),
  };
}
