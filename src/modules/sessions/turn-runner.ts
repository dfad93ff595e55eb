import type { Db, PrismaClient } from '../../db/client.ts';
import { urgently } from '../../db/pool-priority.ts';
import type { Session } from '../../generated/prisma/client.ts';
import type { JobContext } from '../../jobs/job.ts';
import type { EgressGuard } from '../../egress/guard.ts';
import type { Clock } from '../../lib/clock.ts';
import { machineUnavailable, targetFor, type MachineDeps } from '../computers/machines.ts';
import { creditsExhausted, creditStanding } from '../organization/credit-usage.ts';
import { openCustomModelKeys } from '../organization/custom-model-keys.ts';
import { enterpriseSettingsOf } from '../organization/enterprise-settings.ts';
import { maxAutonomyLevelOf } from './autonomy-policy.ts';
import { resolveModel } from '../../agent/models.ts';
import { runtimeHistory } from './context-history.ts';
import { runPersistedTurn, type TurnEnvironment } from './persisted-turn.ts';
import { createModelClient, zeroUsage, type ContentBlock, type TurnResult } from '../../agent/index.ts';
import { sshToolHost } from '../../agent/ssh-tool-host.ts';
import { sessionTools } from './session-tools.ts';
import type { StoredSettings } from './settings.ts';
import { publish } from '../events/publish.ts';
import { sessionEvent, sessionEvents, type TurnOutcome } from './session-events.ts';
import { appendMessage, endTurn, loadHistory, takeQueuedMessages } from './store.ts';
import { cancelPausedTurn, pauseTurn, resumeTurn, sessionGate } from './approvals.ts';
import { sessionTurnJob } from './job-kinds.ts';
import { subagentTool } from './subagent.ts';
import { readRepositoryInstructions } from './repository-instructions.ts';
import { systemPrompt } from './system-prompt.ts';
import { turnEvents } from './turn-events.ts';
import { watchTurn } from './turn-watch.ts';
import { storedSettings } from './views.ts';
import { admissibleWaiting, admitTurnAtCommit, DEFAULT_TURN_LIMITS, turnNotAdmitted, type TurnLimits } from './turn-admission.ts';

export interface TurnRunnerDeps {
  db: PrismaClient;
  clock: Clock;
  machines: Omit<MachineDeps, 'db'>;
  /** Custom models' base URLs are the organization's: they are called through it. */
  egress: Pick<EgressGuard, 'fetch'>;
  /** How often a running turn looks for an interrupt (default 250 ms). */
  watchIntervalMs?: number;
  /** Where models-file API keys are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** How long a tool call waits for approval before it expires (default an hour). */
  approvalTimeoutMs?: number;
  /** Running turns at once per organization and per owner (default DEFAULT_TURN_LIMITS). */
  turnLimits?: TurnLimits;
}

const DEFAULT_APPROVAL_TIMEOUT_MS = 3_600_000;

/** Said in the history where a worker died with tool calls unanswered. */
export const CRASHED_TOOL = 'The control plane restarted while this tool call ran; it may or may not have finished. Check its effects before relying on them.';

/** A problem that ends the turn with a message to the user; retrying would not help. */
class TurnRefused extends Error {}

/**
 * One `sessions.turn` job: runs the session's queued user messages as one agent turn, or
 * continues a turn its previous worker left running (a crash or a shutdown), then leaves the
 * session idle, or pending when more messages arrived meanwhile (their own jobs come next; jobs
 * of one session run one at a time). A turn whose tool calls need approval pauses (approvals.ts)
 * and the job ends; the job sent when they are decided resumes it. Expected problems (model not configured, computer
 * unreachable, credits used up) end the turn with an `isError` assistant message. Unexpected
 * failures are retried, and the retry continues the turn; the last attempt ends it with a
 * message instead, so a session never stays running.
 */
export async function runSessionTurn(deps: TurnRunnerDeps, job: { sessionId: string; begun?: boolean }, ctx: JobContext): Promise<void> {
  const begun = job.begun && ctx.attempt === 1 ? await begunByMessage(deps, job.sessionId) : await beginTurn(deps, job.sessionId);
  if (!begun) return;
  const { session, how } = begun;
  try {
    await runBegunTurn(deps, session, how, ctx);
  } finally {
    // Its slot is free (ended, paused or failed): the organization's next waiting turns may start.
    await startWaitingTurns(deps, session.organizationId, ctx);
  }
}

async function runBegunTurn(deps: TurnRunnerDeps, session: Session, begun: Begun['how'], ctx: JobContext): Promise<void> {
  const sessionId = session.id;
  try {
    const result = await executeTurn(deps, session, ctx);
    if (result === 'shutdown') throw new Error('the control plane stopped during the turn');
    if (result.stopReason === 'awaiting_approval') {
      const timeoutMs = deps.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
      await deps.db.$transaction((tx) => pauseTurn(tx, session.id, result.approvals ?? [], { now: deps.clock.now(), timeoutMs, send: ctx.send }));
      return;
    }
    await finishTurn(deps, session, result, begun === 'resumed');
    // Messages sent while the turn was paused had their jobs find it paused: one more runs them.
    if (begun === 'resumed') await ctx.send(sessionTurnJob, { sessionId });
  } catch (err) {
    if (!(err instanceof TurnRefused) && !ctx.lastAttempt) throw err;
    await finishTurn(deps, session, { stopReason: 'error', error: err instanceof Error ? err.message : String(err) }, begun === 'resumed');
    if (!(err instanceof TurnRefused)) ctx.log.error({ err, sessionId }, 'agent turn failed on its last attempt');
  }
}

/** How a turn began (a new one, one its dead worker left running, one resumed after approvals), and its session as it began. */
interface Begun {
  session: Session;
  how: 'new' | 'continued' | 'resumed';
}

/**
 * A turn its message's transaction began (an idle session's: postMessage), on its job's first
 * run: the session as it is. A later run (its worker died) continues it like any other, and a
 * session no longer running (the reaper ended it) is looked at the usual way.
 */
async function begunByMessage(deps: TurnRunnerDeps, sessionId: string): Promise<false | Begun> {
  const session = await deps.db.session.findUnique({ where: { id: sessionId } });
  // A deleted session's turn starts and stops at once: its watch sees the deletion.
  if (session?.status === 'running' && !session.turnPausedAt) return { session, how: 'new' };
  return beginTurn(deps, sessionId);
}

/**
 * Takes the queued messages and marks the session running (`new`), finds a turn to continue (the
 * session is still running: its worker died), or resumes a turn paused for approvals once none is
 * pending (an interrupt meanwhile cancels it). False when there is nothing to run.
 */
async function beginTurn(deps: TurnRunnerDeps, sessionId: string): Promise<false | Begun> {
  // Ahead of the pool's queue: in a burst, a turn starts once its message is stored, not after
  // every request that queued for a connection before it.
  const begun = urgently(() => deps.db.$transaction((tx) => beginTurnIn(tx, deps, sessionId)));
  return begun.catch((err: unknown) => {
    if (turnNotAdmitted(err)) return false;
    throw err;
  });
}

/** beginTurn's transaction. */
async function beginTurnIn(tx: Db, deps: TurnRunnerDeps, sessionId: string): Promise<false | Begun> {
  const now = deps.clock.now();
  const session = await tx.session.findFirst({ where: { id: sessionId, deletedAt: null } });
  if (!session) return false;
  if (session.status === 'running') {
    await answerDanglingToolCalls(tx, session.id, now, CRASHED_TOOL);
    return { session: await tx.session.update({ where: { id: session.id }, data: { turnHeartbeatAt: now } }), how: 'continued' };
  }
  if (session.turnPausedAt) {
    if (session.interruptRequestedAt) {
      await cancelPausedTurn(tx, session.id, now);
      return false;
    }
    return (await resumeTurn(tx, session.id, now)) ? { session: await tx.session.findUniqueOrThrow({ where: { id: session.id } }), how: 'resumed' } : false;
  }
  const interruptedBeforeStart = session.status === 'pending' && session.interruptRequestedAt !== null;
  const queued = await takeQueuedMessages(tx, session.id, now);
  if (queued.length === 0 || interruptedBeforeStart) {
    await publish(tx, sessionEvent.messageUpdated(queued));
    // Interrupted before its turn began: the messages stay in the history, unanswered.
    await tx.session.updateMany({
      where: { id: session.id, status: { not: 'running' } },
      data: { status: 'idle', interruptRequestedAt: null, ...(session.status === 'pending' ? { completedAt: now, updatedAt: now } : {}) },
    });
    if (session.status === 'pending') await sessionEvents.turnEnded(tx, session.id, 'idle', interruptedBeforeStart ? 'interrupted' : 'completed');
    return false;
  }
  const running = await tx.session.update({ where: { id: session.id }, data: { status: 'running', turnHeartbeatAt: now, updatedAt: now } });
  // Counted at commit: over its organization's or owner's limit, the commit fails and rolls all
  // of this back; the session stays pending with its messages queued until a turn of the
  // organization ends (startWaitingTurns) or the reaper.
  await admitTurnAtCommit(tx, deps.turnLimits ?? DEFAULT_TURN_LIMITS);
  await publish(tx, [...sessionEvent.messageUpdated(queued), sessionEvent.status(session.id, 'running')], {
    analytics: [turnEvents(session, storedSettings(session)).userTurn(now)],
  });
  return { session: running, how: 'new' };
}

/** Sends the turn jobs of the organization's sessions waiting for a slot that may start now, oldest first. */
async function startWaitingTurns(deps: TurnRunnerDeps, organizationId: string, ctx: JobContext): Promise<void> {
  const ids = await admissibleWaiting(deps.db, organizationId, deps.turnLimits ?? DEFAULT_TURN_LIMITS);
  for (const id of ids) await ctx.send(sessionTurnJob, { sessionId: id });
}

/** Said where a turn ended (refused, failed) before the calls of its last message ran: a resumed turn's. */
const TURN_ENDED_TOOL = 'The turn ended before this tool call ran; it was not run.';

/** Answers the tool calls of the last assistant message that have no result (their worker died, or the turn ended first). */
async function answerDanglingToolCalls(tx: Parameters<Parameters<PrismaClient['$transaction']>[0]>[0], sessionId: string, now: Date, text: string) {
  const last = await tx.sessionMessage.findFirst({
    where: { sessionId, OR: [{ queueStatus: null }, { queueStatus: { not: 'queued' } }] },
    orderBy: { seq: 'desc' },
  });
  if (last?.role !== 'assistant') return;
  const calls = (last.content as ContentBlock[]).filter((b) => b.type === 'tool_use');
  if (calls.length === 0) return;
  await appendMessage(
    tx,
    sessionId,
    { role: 'tool', content: calls.map((c) => ({ type: 'tool_result' as const, toolUseId: c.id, content: text, isError: true })) },
    now,
  );
}

async function executeTurn(deps: TurnRunnerDeps, session: Session, ctx: JobContext): Promise<TurnResult | 'shutdown'> {
  const settings = storedSettings(session);
  const env = await environment(deps, session, settings, ctx.signal);
  const history = await loadHistory(deps.db, session.id);
  // A continued turn whose model had already answered has nothing left to do.
  const last = history.filter((m) => m.queueStatus !== 'queued').at(-1);
  if (last?.role === 'assistant' && !(last.content as ContentBlock[]).some((b) => b.type === 'tool_use')) {
    return { stopReason: 'end_turn', usage: zeroUsage(), steps: 0 };
  }
  const baseTools = sessionTools(settings);
  const tools = sessionTools(settings, [subagentTool(env, session, settings, baseTools)]);
  const watch = watchTurn(deps.db, deps.clock, session.id, ctx.signal, deps.watchIntervalMs);
  try {
    const timeoutMs = deps.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    const result = await runPersistedTurn(env, session, settings, {
      // Messages still queued arrived after this turn began: they belong to the next one.
      history: runtimeHistory(history.filter((m) => m.queueStatus !== 'queued')),
      tools,
      signal: watch.signal,
      gate: sessionGate(deps.db, session.id, timeoutMs),
    });
    return watch.cause() === 'shutdown' ? 'shutdown' : result;
  } finally {
    watch.stop();
  }
}

/** The model and the computer of a turn; a TurnRefused names what is missing. */
async function environment(deps: TurnRunnerDeps, session: Session, settings: StoredSettings, signal: AbortSignal): Promise<TurnEnvironment> {
  const [enterpriseSettings, computer] = await Promise.all([
    enterpriseSettingsOf(deps.db, session.organizationId),
    deps.db.computer.findFirst({ where: { id: session.computerId, deletedAt: null } }),
  ]);
  if (!computer) throw new TurnRefused(`Computer ${session.computerId} was deleted; send the next message with another computerId`);
  if (computer.status !== 'active') throw new TurnRefused(`Computer "${computer.name}" is ${computer.status}; wait until it is active`);
  if (session.ownerKind === 'human') {
    const exhausted = creditsExhausted(await creditStanding(deps.db, session.organizationId, session.ownerId, deps.clock.now()));
    if (exhausted) throw new TurnRefused(exhausted);
  }
  const modelId = (settings.interactionMode === 'spec' && settings.specModeModel) || settings.model;
  if (!modelId) throw new TurnRefused('The session has no model; set sessionSettings.model with PATCH');
  let resolved;
  try {
    resolved = resolveModel(modelId, openCustomModelKeys(enterpriseSettings, deps.machines.secrets), deps.env ?? process.env, deps.egress.fetch);
  } catch (err) {
    throw new TurnRefused((err as Error).message);
  }
  let target;
  try {
    target = await targetFor({ db: deps.db, ...deps.machines }, computer);
  } catch (err) {
    const reported = machineUnavailable(computer, err);
    throw new TurnRefused(reported instanceof Error ? reported.message : String(reported));
  }
  const instructions = settings.agentsMdEnabled === false ? [] : await readRepositoryInstructions(deps.machines.ssh, target, session.cwd, signal);
  return {
    db: deps.db,
    clock: deps.clock,
    host: sshToolHost(deps.machines.ssh, target, session.cwd),
    model: createModelClient(resolved.config),
    pricing: resolved.pricing,
    compaction: compactionModel(settings, modelId, enterpriseSettings, deps),
    system: systemPrompt(computer, session.cwd, settings, instructions),
    maxAutonomy: maxAutonomyLevelOf(enterpriseSettings),
  };
}

/**
 * The model that compacts the session's context: `compactionModel` when it names another model
 * that can be called, else the session's own (undefined here); `off` when the threshold check is
 * disabled. A compaction model that cannot be resolved (removed from the models file, key unset)
 * does not stop the turn: the session's model summarises instead.
 */
function compactionModel(settings: StoredSettings, modelId: string, enterpriseSettings: unknown, deps: TurnRunnerDeps): TurnEnvironment['compaction'] {
  if (settings.compactionThresholdCheckEnabled === false) return 'off';
  const id = settings.compactionModel;
  if (!id || id === 'current-model' || id === modelId) return undefined;
  try {
    const resolved = resolveModel(id, openCustomModelKeys(enterpriseSettings, deps.machines.secrets), deps.env ?? process.env, deps.egress.fetch);
    return { model: createModelClient(resolved.config), pricing: resolved.pricing };
  } catch {
    return undefined;
  }
}

const STOP_NOTES: Partial<Record<TurnResult['stopReason'], (r: Pick<TurnResult, 'error' | 'steps'>) => string>> = {
  error: (r) => `The turn failed: ${r.error ?? 'unknown error'}`,
  max_steps: (r) => `The turn stopped after ${r.steps} model calls, the limit for one turn. Send a message to let the agent continue.`,
};

const OUTCOMES: Record<TurnResult['stopReason'], TurnOutcome> = {
  end_turn: 'completed',
  interrupted: 'interrupted',
  max_steps: 'failed',
  error: 'failed',
  awaiting_approval: 'failed',
};

/**
 * Ends the turn: a note for failures, the interrupt cleared, idle (or pending for queued messages).
 * A resumed turn that ended before its decided calls ran (computer gone, model removed) answers them.
 */
async function finishTurn(deps: TurnRunnerDeps, session: Session, result: Pick<TurnResult, 'stopReason' | 'error'> & { steps?: number }, resumed: boolean) {
  const now = deps.clock.now();
  const note = STOP_NOTES[result.stopReason]?.({ error: result.error, steps: result.steps ?? 0 });
  await deps.db.$transaction(async (tx) => {
    if (resumed) await answerDanglingToolCalls(tx, session.id, now, TURN_ENDED_TOOL);
    await endTurn(tx, session.id, now, { note, outcome: OUTCOMES[result.stopReason] });
  });
}
