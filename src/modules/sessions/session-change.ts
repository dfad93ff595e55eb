import type { Db } from '../../db/client.ts';
import type { SessionMessage, SessionStatus } from '../../generated/prisma/client.ts';
import { analyticsInsert, type AnalyticsEvent } from '../analytics/events.ts';
import { eventsInsert, type NewEvent } from '../events/publish.ts';
import type { TokenUsage } from './schemas.ts';
import { admitTurnAtCommitSql, type TurnLimits } from './turn-admission.ts';
import { sessionEvent } from './session-events.ts';

/** What a change adds to a session's counters. */
export interface SessionCharges {
  /** Messages appended. */
  messages?: number;
  /** Model calls' usage, each with its credits: on the session, and inclusive up its parent chain. */
  usage?: Partial<TokenUsage>[];
  /** The turn's wall time, to `assistantActiveTimeMs` (the session's own, not its ancestors'). */
  activeMs?: number;
  /** When the sessions changed: their `updatedAt` (the time of day when not given). */
  now?: Date;
  /** Set on the session in the same update: the computer a message switches to, a first title. */
  set?: { computerId?: string; title?: string };
}

/**
 * How a user message meets its session's turn, stored only in the state it expects (else nothing
 * of the change is): it `begins` one (idle → running, beating at `heartbeat`, counted against
 * `limits` at commit), `waits` for a turn slot (idle → pending), or `queues` behind the turn that
 * runs or waits (not idle). Leaving idle clears an interrupt left over from an earlier turn.
 */
export type MessageTurn = { begins: { heartbeat: Date; limits: TurnLimits } } | { waits: true } | { queues: true };

/** A change to one session, stored by storeSessionChange. */
export interface SessionChange {
  /** A message to append, as it is stored; its `seq` is drawn as it is inserted. */
  message?: Omit<SessionMessage, 'seq'>;
  charges: SessionCharges;
  /** Published after the usage events and the message's `session.message.created`. */
  events?: readonly NewEvent[];
  /** Stored with the events. */
  analytics?: readonly AnalyticsEvent[];
  turn?: MessageTurn;
}

/** A change found its session gone, or (with `turn`) in another state than it expects: nothing of it was stored. */
export class SessionStateChanged extends Error {
  constructor(sessionId: string) {
    super(`session ${sessionId} is not there, or not in the state the change expects`);
  }
}

/** Each usage field's columns on the session: its own usage, and the inclusive (with its subagents'). */
const USAGE_COLUMNS = [
  ['inputTokens', 'input_tokens', 'incl_input_tokens'],
  ['outputTokens', 'output_tokens', 'incl_output_tokens'],
  ['cacheCreationTokens', 'cache_creation_tokens', 'incl_cache_creation_tokens'],
  ['cacheReadTokens', 'cache_read_tokens', 'incl_cache_read_tokens'],
  ['thinkingTokens', 'thinking_tokens', 'incl_thinking_tokens'],
  ['serviceCredits', 'service_credits', 'incl_service_credits'],
] as const satisfies readonly (readonly [keyof TokenUsage, string, string])[];

/**
 * Stores a change to a session as one statement, atomic without a transaction of the caller's: the
 * message inserted, the session's counters updated (and the inclusive usage of every ancestor, as
 * subagent usage rolls up to the top-level session), a `session.usage` event per model call, the
 * message's `session.message.created` (with the `seq` the insert drew), the other events and the
 * analytics. Answers the message's `seq` and the session's status after the change, or null when
 * the session is not there or not in the state `turn` expects: then nothing of it is stored.
 *
 * One statement is one round trip: a turn's message step, which took five (BEGIN, the insert, the
 * update, the events, COMMIT), each waiting for a busy replica's event loop, takes one.
 */
export async function storeSessionChange(db: Db, sessionId: string, change: SessionChange): Promise<{ seq: bigint | null; status: SessionStatus } | null> {
  const params: unknown[] = [];
  const param: Param = (value, type) => `$${params.push(value)}::${type}`;
  const id = param(sessionId, 'text');
  const { charges, message } = change;
  const usage = charges.usage ?? [];

  // Usage is added to the session's own and inclusive columns, and to its ancestors' inclusive ones.
  const own: string[] = [];
  const ancestors: string[] = [];
  for (const [key, ownColumn, inclusiveColumn] of usage.length ? USAGE_COLUMNS : []) {
    const total = usage.reduce((n, u) => n + (u[key] ?? 0), 0);
    const added = key === 'serviceCredits' ? param(total, 'float8') : param(BigInt(Math.round(total)).toString(), 'bigint');
    own.push(`${ownColumn} = s.${ownColumn} + ${added}`, `${inclusiveColumn} = s.${inclusiveColumn} + ${added}`);
    ancestors.push(`${inclusiveColumn} = a.${inclusiveColumn} + ${added}`);
  }
  // Every session the change updates is stamped, as Prisma's @updatedAt stamps an update of its own.
  const stamp = param((charges.now ?? new Date()).toISOString(), 'timestamptz');
  const sets = [
    `updated_at = ${stamp}`,
    ...(charges.set?.computerId !== undefined ? [`computer_id = ${param(charges.set.computerId, 'text')}`] : []),
    ...(charges.set?.title !== undefined ? [`title = ${param(charges.set.title, 'text')}`] : []),
    ...(charges.messages ? [`message_count = s.message_count + ${param(charges.messages, 'int')}`] : []),
    ...(charges.activeMs !== undefined ? [`assistant_active_ms = s.assistant_active_ms + ${param(Math.round(charges.activeMs), 'bigint')}`] : []),
    ...own,
  ];
  const move = turnMove(change.turn, param);
  const parts = [
    ...move.before,
    `charged AS (UPDATE sessions s SET ${[...sets, ...move.sets].join(', ')}${move.from} WHERE s.id = ${id}${move.expected} RETURNING s.status::text AS status)`,
  ];
  // Nothing is stored unless the session's update matched: every other part reads this.
  const matched = 'EXISTS (SELECT 1 FROM charged)';
  if (usage.length) {
    // UNION, not UNION ALL: a parent chain that loops ends where it began.
    parts.unshift(`up(id) AS (
      SELECT parent_session_id FROM sessions WHERE id = ${id} AND parent_session_id IS NOT NULL
      UNION SELECT s.parent_session_id FROM sessions s JOIN up ON s.id = up.id WHERE s.parent_session_id IS NOT NULL)`);
    parts.push(
      `rolled AS (UPDATE sessions a SET updated_at = ${stamp}, ${ancestors.join(', ')} WHERE a.id IN (SELECT id FROM up) AND a.id <> ${id} AND ${matched})`,
    );
  }
  if (message) parts.push(`msg AS (${messageInsert(message, id, param)} WHERE ${matched} RETURNING seq)`);
  const usageEvents = usage.map((u) => sessionEvent.usage(sessionId, u));
  const events = [...usageEvents, ...(message ? [sessionEvent.messageCreated({ ...message, seq: 0n })] : []), ...(change.events ?? [])];
  if (events.length) {
    // The message's event carries the seq its insert drew, in the same statement.
    const data = message
      ? `CASE e.ord WHEN ${usageEvents.length} THEN jsonb_set(e.data, '{message,seq}', to_jsonb((SELECT seq FROM msg))) ELSE e.data END`
      : 'e.data';
    const insert = eventsInsert(events, params.length + 1, { data, when: matched });
    params.push(...insert.params);
    parts.push(`published AS (${insert.sql})`);
  }
  if (change.analytics?.length) {
    const insert = analyticsInsert(change.analytics, params.length + 1, matched);
    params.push(...insert.params);
    parts.push(`analytics AS (${insert.sql})`);
  }
  const [row] = await db.$queryRawUnsafe<{ status: SessionStatus | null; seq: bigint | number | null }[]>(
    `WITH RECURSIVE ${parts.join(',\n')}
    SELECT (SELECT status FROM charged) AS status, ${message ? '(SELECT seq FROM msg)' : 'NULL::bigint'} AS seq`,
    ...params,
  );
  return row?.status ? { seq: row.seq === null ? null : BigInt(row.seq), status: row.status } : null;
}

type Param = (value: unknown, type: string) => string;

/** The session's update for a message's turn (MessageTurn): its SETs, a WITH before it, its FROM, and the state it expects; nothing without one. */
function turnMove(turn: MessageTurn | undefined, param: Param): { before: string[]; sets: string[]; from: string; expected: string } {
  if (!turn) return { before: [], sets: [], from: '', expected: '' };
  if ('begins' in turn) {
    return {
      before: [`limits AS MATERIALIZED (${admitTurnAtCommitSql(turn.begins.limits, (v) => param(v, 'text'))})`],
      sets: [`status = 'running'`, 'interrupt_requested_at = NULL', `turn_heartbeat_at = ${param(turn.begins.heartbeat.toISOString(), 'timestamptz')}`],
      // Referenced, or PostgreSQL would skip the WITH query that names the limits.
      from: ' FROM limits',
      expected: ` AND s.status = 'idle'`,
    };
  }
  if ('waits' in turn) return { before: [], sets: [`status = 'pending'`, 'interrupt_requested_at = NULL'], from: '', expected: ` AND s.status = 'idle'` };
  return { before: [], sets: [], from: '', expected: ` AND s.status <> 'idle'` };
}

/** The message's insert, as a SELECT its caller ends with a WHERE; `id` is the session's placeholder. */
function messageInsert(message: Omit<SessionMessage, 'seq'>, id: string, param: Param): string {
  const values = [
    param(message.id, 'text'),
    id,
    param(message.role, 'text'),
    param(JSON.stringify(message.content), 'jsonb'),
    param(message.queueStatus, 'text'),
    param(message.computerId, 'text'),
    param(message.parentId, 'text'),
    param(message.userMessageSource, 'text'),
    param(message.isError, 'boolean'),
    param(message.modelId, 'text'),
    param(message.reasoningEffort, 'text'),
    param(message.extra === null ? null : JSON.stringify(message.extra), 'jsonb'),
    param(message.createdAt.toISOString(), 'timestamptz'),
    param(message.updatedAt.toISOString(), 'timestamptz'),
  ];
  return `INSERT INTO session_messages
    (id, session_id, role, content, queue_status, computer_id, parent_id, user_message_source, is_error, model_id, reasoning_effort, extra, created_at, updated_at)
    SELECT ${values.join(', ')}`;
}
