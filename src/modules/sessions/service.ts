import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { Principal } from '../../auth/principal.ts';
import type { Prisma, PrismaClient } from '../../db/client.ts';
import type { Session } from '../../generated/prisma/client.ts';
import { decodeOpaqueCursor, encodeOpaqueCursor, pageQuery, toPage } from '../../http/pagination.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import { BadRequest, GatewayTimeout, NotFound, ServiceUnavailable, TooManyRequests } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { recordEvents } from '../analytics/events.ts';
import { recordSessionChange } from './session-audit.ts';
import { ownerOf, reachableComputer } from '../computers/access.ts';
import { machineUnavailable, targetFor, type MachineDeps } from '../computers/machines.ts';
import { reachableSession } from './access.ts';
import { recordCheckpoints } from './checkpoints.ts';
import { sessionTurnJob } from './job-kinds.ts';
import { turnEvents } from './turn-events.ts';
import { DEFAULT_TURN_LIMITS, turnNotAdmitted, type TurnLimits } from './turn-admission.ts';
import { knownModel } from '../../agent/models.ts';
import { defaultModelFor, modelAllowed } from '../../agent/model-catalog.ts';
import {
  DEFAULT_WAIT_MS,
  SessionSettingsInputSchema,
  type CheckpointsInput,
  type ContentBlock,
  type CreateSessionInput,
  type PostMessageInput,
  type SessionSettingsInput,
} from './schemas.ts';
import { mergeSettings, organizationDefaults, type StoredSettings } from './settings.ts';
import { enterpriseSettingsOf } from '../organization/enterprise-settings.ts';
import { sessionEvent, sessionEvents } from './session-events.ts';
import { SessionStateChanged } from './session-change.ts';
import { appendMessage } from './store.ts';
import { approveAllowedCalls, cancelPausedTurn, pendingApprovals } from './approvals.ts';
import { effectiveAutonomy, enforceMaxAutonomy, maxAutonomyLevelOf } from './autonomy-policy.ts';
import { decideApproval, type DecisionInput } from './decide-approval.ts';
import { messageView, sessionView, storedSettings } from './views.ts';

export interface SessionsDeps {
  db: PrismaClient;
  clock: Clock;
  queue: Pick<JobQueue, 'send'>;
  machines: MachineDeps;
  /** `turnLimits`: running turns at once per organization and per owner (default DEFAULT_TURN_LIMITS). */
  limits: { maxConcurrentSessions: number; retentionDays: number; turnLimits?: TurnLimits };
  /** AGENTPLANE_DEFAULT_MODEL: the model of sessions that name none (else the first the organization may use). */
  defaultModel?: string;
  /** How often a waiting add-message call looks at the session; default 100 ms. */
  waitPollMs?: number;
}

const DAY_MS = 86_400_000;

function cwdError(cwd: string, problem: string): BadRequest {
  return new BadRequest(`cwd ${JSON.stringify(cwd)} ${problem} on the computer; pass an existing directory`, {
    metadata: { errors: [{ field: 'cwd', message: problem }], cwd },
  });
}

/** The organization's session defaults, keeping only fields that are valid session settings. */
function validDefaults(enterpriseSettings: unknown): SessionSettingsInput {
  const shape = SessionSettingsInputSchema.shape;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(organizationDefaults(enterpriseSettings))) {
    if (key === 'archivedAt' || !(key in shape)) continue;
    const parsed = shape[key as keyof typeof shape].safeParse(value);
    if (parsed.success && parsed.data !== undefined) out[key] = parsed.data;
  }
  return out as SessionSettingsInput;
}

function checkModels(settings: StoredSettings, enterpriseSettings: unknown): void {
  for (const field of ['model', 'specModeModel'] as const) {
    const id = settings[field];
    if (id !== undefined && !knownModel(id, { enterpriseSettings })) {
      throw new BadRequest(
        `sessionSettings.${field} ${JSON.stringify(id)} is not a known model; GET /api/v0/models lists the models this organization may use`,
        { metadata: { errors: [{ field: `sessionSettings.${field}`, message: 'unknown model' }] } },
      );
    }
    if (id !== undefined && !modelAllowed(id, enterpriseSettings)) {
      throw new BadRequest(
        `sessionSettings.${field} ${JSON.stringify(id)} is not allowed by the organization's model policy; GET /api/v0/models lists the models it may use`,
        { metadata: { errors: [{ field: `sessionSettings.${field}`, message: 'not allowed by the model policy' }] } },
      );
    }
  }
}

function titleOf(text: string): string {
  const line = text.trim().split('\n')[0]!.trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

const SeqCursorSchema = z.object({ s: z.string().regex(/^\d+$/) });

/**
 * Creating a session names its computer in the body, so a computer that does not exist (for the
 * caller) or cannot be reached is a problem with the request: 400 naming it, as clients of the
 * hosted platform expect, instead of the 404/503 the computer's own endpoints answer.
 */
function computerIdRefused(computerId: string, err: unknown): unknown {
  if (!(err instanceof NotFound || err instanceof ServiceUnavailable)) return err;
  const reason = err instanceof NotFound ? 'no such computer in this organization' : err.message;
  return new BadRequest(`computerId ${computerId}: ${reason}`, {
    metadata: { errors: [{ field: 'computerId', message: reason }] },
  });
}

export function createSessionsService(deps: SessionsDeps) {
  const { db, clock } = deps;

  /**
   * The computer `ref` names: an id, or else the name of one of the caller's own live computers
   * (unique per owner, so never ambiguous; another owner's computers are reached by id).
   */
  async function computerNamed(principal: Principal, ref: string) {
    try {
      return await reachableComputer(db, principal, ref);
    } catch (err) {
      if (!(err instanceof NotFound)) throw err;
      const owner = ownerOf(principal);
      const named = await db.computer.findFirst({
        where: { organizationId: principal.organizationId, ownerKind: owner.kind, ownerId: owner.id, liveName: ref, deletedAt: null },
        select: { id: true },
      });
      if (!named) throw new NotFound(`Computer ${ref} not found: neither the id of a computer you can reach nor the name of one of yours`);
      return reachableComputer(db, principal, named.id);
    }
  }

  /** An active computer the principal may reach (by id or its own computer's name), and `cwd` (default: the remote user's home) checked on it. */
  async function checkComputer(principal: Principal, computerId: string, cwd: string | undefined) {
    const computer = await computerNamed(principal, computerId);
    if (computer.status !== 'active') {
      throw new BadRequest(`Computer ${computerId} is ${computer.status}, not active; wait until it is active or pick another computer`, {
        metadata: { errors: [{ field: 'computerId', message: `computer is ${computer.status}` }] },
      });
    }
    try {
      const target = await targetFor(deps.machines, computer);
      if (cwd === undefined) {
        const home = await deps.machines.ssh.exec(target, 'printf %s "$HOME"', { timeoutMs: 15_000 });
        return { computer, cwd: home.stdout.trim() || '/' };
      }
      const stat = await deps.machines.ssh.stat(target, cwd, { signal: AbortSignal.timeout(15_000) });
      if (!stat) throw cwdError(cwd, 'does not exist');
      if (!stat.isDirectory) throw cwdError(cwd, 'is not a directory');
      return { computer, cwd };
    } catch (err) {
      throw machineUnavailable(computer, err);
    }
  }

  async function childrenOf(sessions: Session[]) {
    if (sessions.length === 0) return new Map<string, Session[]>();
    const children = await db.session.findMany({
      where: { parentSessionId: { in: sessions.map((s) => s.id) }, deletedAt: null },
    });
    const byParent = new Map<string, Session[]>();
    for (const c of children) byParent.set(c.parentSessionId!, [...(byParent.get(c.parentSessionId!) ?? []), c]);
    return byParent;
  }

  async function view(session: Session) {
    const [children, pending] = await Promise.all([childrenOf([session]), pendingApprovals(db, [session.id])]);
    return sessionView(session, children.get(session.id), pending.get(session.id));
  }

  return {
    async create(principal: Principal, input: CreateSessionInput) {
      const owner = ownerOf(principal);
      const enterprise = await enterpriseSettingsOf(db, principal.organizationId);
      const settings = mergeSettings(validDefaults(enterprise), input.sessionSettings ?? {});
      settings.model ??= defaultModelFor(enterprise, deps.defaultModel);
      if (!settings.model) {
        throw new BadRequest(
          'sessionSettings.model is required: this deployment offers this organization no model (an operator sets AGENTPLANE_MODELS_FILE, or an owner adds custom models)',
          { metadata: { errors: [{ field: 'sessionSettings.model', message: 'required' }] } },
        );
      }
      checkModels(settings, enterprise);
      enforceMaxAutonomy(settings, input.sessionSettings ?? {}, enterprise);
      const busy = await db.session.count({
        where: { organizationId: principal.organizationId, ownerKind: owner.kind, ownerId: owner.id, deletedAt: null, status: { not: 'idle' } },
      });
      const limit = deps.limits.maxConcurrentSessions;
      if (busy >= limit) {
        throw new TooManyRequests(`You have ${busy} sessions pending or running, the limit is ${limit}; wait for one to finish or interrupt one`, {
          headers: { 'Retry-After': '30' },
          metadata: { limit, active: busy },
        });
      }
      const { computer, cwd } = await checkComputer(principal, input.computerId, input.cwd).catch((err: unknown) => {
        throw computerIdRefused(input.computerId, err);
      });
      const now = clock.now();
      const session = await db.$transaction(async (tx) => {
        const created = await tx.session.create({
          data: {
            id: newId('sess'),
            organizationId: principal.organizationId,
            ownerKind: owner.kind,
            ownerId: owner.id,
            computerId: computer.id,
            cwd,
            settings: settings as Prisma.InputJsonObject,
            archivedAt: input.sessionSettings?.archivedAt ? new Date(input.sessionSettings.archivedAt) : null,
            createdAt: now,
            updatedAt: now,
          },
        });
        await recordEvents(tx, [
          { kind: 'session_started', organizationId: principal.organizationId, userId: owner.id, occurredAt: now, sessionId: created.id },
        ]);
        return created;
      });
      return sessionView(session);
    },

    async list(principal: Principal, query: { limit: number; cursor?: string; computerId?: string }) {
      const owner = ownerOf(principal);
      const page = pageQuery(query);
      const rows = await db.session.findMany({
        where: {
          organizationId: principal.organizationId,
          ownerKind: owner.kind,
          ownerId: owner.id,
          deletedAt: null,
          parentSessionId: null,
          ...(query.computerId ? { computerId: query.computerId } : {}),
          ...page.where,
        },
        orderBy: page.orderBy,
        take: page.take,
      });
      const { items, pagination } = toPage(rows, query);
      const [children, pending] = await Promise.all([
        childrenOf(items),
        pendingApprovals(
          db,
          items.map((s) => s.id),
        ),
      ]);
      return { sessions: items.map((s) => sessionView(s, children.get(s.id), pending.get(s.id))), pagination };
    },

    async get(principal: Principal, sessionId: string, computerId?: string) {
      return view(await reachableSession(db, principal, sessionId, { computerId }));
    },

    async update(principal: Principal, sessionId: string, change: SessionSettingsInput) {
      const session = await reachableSession(db, principal, sessionId);
      const enterprise = await enterpriseSettingsOf(db, principal.organizationId);
      const settings = mergeSettings(storedSettings(session), change);
      checkModels({ model: change.model, specModeModel: change.specModeModel }, enterprise);
      enforceMaxAutonomy(settings, change, enterprise);
      const archivedAt = change.archivedAt === undefined ? session.archivedAt : change.archivedAt === null ? null : new Date(change.archivedAt);
      const now = clock.now();
      const updated = await db.$transaction(async (tx) => {
        const row = await tx.session.update({ where: { id: session.id }, data: { settings: settings as Prisma.InputJsonObject, archivedAt, updatedAt: now } });
        if (!session.turnPausedAt) return row;
        // Calls the turn waits on that the new autonomy allows are answered by the change.
        const level = effectiveAutonomy(settings, maxAutonomyLevelOf(enterprise));
        const owner = ownerOf(principal);
        const approved = await approveAllowedCalls(tx, session.id, level, {
          decidedBy: `${owner.kind}:${owner.id}`,
          now,
          resume: () => deps.queue.send(sessionTurnJob, { sessionId: session.id }, { tx }),
        });
        for (const a of approved) {
          await recordSessionChange(
            tx,
            principal,
            session.id,
            { action: 'tool_call_approved', toolUseId: a.toolUseId, toolName: a.toolName, by: 'autonomy_change', autonomyLevel: level },
            now,
          );
        }
        return approved.length > 0 ? tx.session.findUniqueOrThrow({ where: { id: session.id } }) : row;
      });
      return view(updated);
    },

    async remove(principal: Principal, sessionId: string, computerId?: string) {
      const session = await reachableSession(db, principal, sessionId, { computerId });
      const now = clock.now();
      const purgeAfter = new Date(now.getTime() + deps.limits.retentionDays * DAY_MS);
      await db.$transaction(async (tx) => {
        await tx.session.update({
          where: { id: session.id },
          // A running turn stops: the runtime treats a deleted session as interrupted.
          data: { deletedAt: now, purgeAfter, ...(session.status !== 'idle' ? { interruptRequestedAt: now } : {}) },
        });
        await recordSessionChange(tx, principal, session.id, { action: 'deleted', purgeAfter: purgeAfter.toISOString() }, now);
      });
    },

    async restore(principal: Principal, sessionId: string) {
      const session = await reachableSession(db, principal, sessionId, { includeDeleted: true });
      if (!session.deletedAt) return view(session);
      const now = clock.now();
      if (!session.purgeAfter || session.purgeAfter <= now) {
        throw new NotFound(`Session ${sessionId} was deleted more than ${deps.limits.retentionDays} days ago and can no longer be restored`);
      }
      const restored = await db.$transaction(async (tx) => {
        const row = await tx.session.update({ where: { id: session.id }, data: { deletedAt: null, purgeAfter: null, updatedAt: now } });
        await recordSessionChange(tx, principal, session.id, { action: 'restored' }, now);
        return row;
      });
      return view(restored);
    },

    async interrupt(principal: Principal, sessionId: string) {
      const session = await reachableSession(db, principal, sessionId);
      if (session.status === 'idle') return { status: session.status };
      if (session.turnPausedAt) {
        // A turn paused for approvals has no worker to tell: it is cancelled here.
        const ended = await db.$transaction(async (tx) => {
          const status = await cancelPausedTurn(tx, session.id, clock.now());
          if (status === 'pending') await deps.queue.send(sessionTurnJob, { sessionId: session.id }, { tx });
          return status;
        });
        if (ended) return { status: ended };
      }
      await db.$transaction(async (tx) => {
        const { count } = await tx.session.updateMany({
          where: { id: session.id, status: { not: 'idle' }, interruptRequestedAt: null },
          data: { interruptRequestedAt: clock.now() },
        });
        if (count) await sessionEvents.interruptRequested(tx, session.id);
      });
      const current = await db.session.findUniqueOrThrow({ where: { id: session.id }, select: { status: true } });
      return { status: current.status };
    },

    async listMessages(principal: Principal, sessionId: string, query: { limit: number; cursor?: string; computerId?: string; role?: string }) {
      const session = await reachableSession(db, principal, sessionId, { computerId: query.computerId });
      const before = query.cursor ? BigInt(decodeOpaqueCursor(query.cursor, SeqCursorSchema).s) : undefined;
      // Newest first; the cursor pages backwards through (session_id, seq).
      const rows = await db.sessionMessage.findMany({
        where: { sessionId: session.id, ...(query.role ? { role: query.role } : {}), ...(before !== undefined ? { seq: { lt: before } } : {}) },
        orderBy: { seq: 'desc' },
        take: query.limit + 1,
      });
      const items = rows.slice(0, query.limit);
      const hasMore = rows.length > query.limit;
      return {
        messages: items.map(messageView),
        pagination: { hasMore, nextCursor: hasMore ? encodeOpaqueCursor({ s: items[items.length - 1]!.seq.toString() }) : null },
      };
    },

    async getMessage(principal: Principal, sessionId: string, messageId: string, computerId?: string) {
      const session = await reachableSession(db, principal, sessionId, { computerId });
      const message = await db.sessionMessage.findFirst({ where: { id: messageId, sessionId: session.id } });
      if (!message) throw new NotFound(`Message ${messageId} not found in session ${sessionId}`);
      return messageView(message);
    },

    async postMessage(principal: Principal, sessionId: string, input: PostMessageInput) {
      const session = await reachableSession(db, principal, sessionId);
      const asked = input.computerId !== undefined && input.computerId !== session.computerId ? input.computerId : undefined;
      const resolved = asked ? (await checkComputer(principal, asked, session.cwd)).computer.id : undefined;
      const switchTo = resolved !== session.computerId ? resolved : undefined;
      const content: ContentBlock[] = [
        { type: 'text', text: input.text },
        ...(input.images ?? []).map((source) => ({ type: 'image' as const, source })),
        ...(input.files ?? []).map((source) => ({ type: 'document' as const, source })),
      ];
      // A message to an idle session begins its turn in the same statement, counted against the
      // running-turn limits by its commit: the turn has started when the answer is sent, and the
      // job that runs it needs no transaction of its own to begin (turn-runner.ts). Over a limit
      // the commit fails and nothing of it stays; stored again, the message waits, pending, in order.
      // To a busy session it queues for the turn after. The session's state as read decides which
      // is tried first; the statement stores nothing if the state moved meanwhile, and the other is tried.
      const turn = turnEvents(session, storedSettings(session));
      const limits = deps.limits.turnLimits ?? DEFAULT_TURN_LIMITS;
      const store = (how: 'begins' | 'waits' | 'queues') =>
        db.$transaction(async (tx) => {
          // Taken once the transaction has its connection: a burst's messages are stamped when stored,
          // in the order they are stored, not when their requests began waiting for the pool.
          const now = clock.now();
          const begins = how === 'begins';
          // The message's own update of the session carries the switch, the title and the turn; its
          // status as of this transaction is what the answer reports.
          const row = await appendMessage(
            tx,
            session.id,
            {
              role: 'user',
              content,
              queueStatus: begins ? 'consumed' : 'queued',
              userMessageSource: 'sessions_api',
              computerId: switchTo ?? session.computerId,
            },
            now,
            [],
            {
              session: { ...(switchTo ? { computerId: switchTo } : {}), ...(session.title ? {} : { title: titleOf(input.text) }) },
              turn: begins ? { begins: { heartbeat: now, limits } } : how === 'waits' ? { waits: true } : { queues: true },
              events: how === 'queues' ? [] : [sessionEvent.status(session.id, begins ? 'running' : 'pending')],
              analytics: [turn.userMessage(now), ...(begins ? [turn.userTurn(now)] : [])],
            },
          );
          await deps.queue.send(sessionTurnJob, { sessionId: session.id, ...(begins ? { begun: true } : {}) }, { tx });
          return { ...row, status: row.sessionStatus };
        });
      let how: 'begins' | 'waits' | 'queues' = session.status === 'idle' ? 'begins' : 'queues';
      let message: Awaited<ReturnType<typeof store>> | undefined;
      for (let attempt = 1; !message; attempt++) {
        message = await store(how).catch((err: unknown) => {
          // A session's state moves between two of a few; one that keeps moving is not waited for.
          if (attempt === 4) throw err;
          if (turnNotAdmitted(err)) how = 'waits';
          else if (err instanceof SessionStateChanged) how = how === 'queues' ? 'begins' : 'queues';
          else throw err;
          return undefined;
        });
      }
      if (!input.waitForCompletion) return { messageId: message.id, status: message.status };

      const timeoutMs = input.waitTimeoutMs ?? DEFAULT_WAIT_MS;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const current = await db.session.findUnique({ where: { id: session.id }, select: { status: true, deletedAt: true } });
        if (!current || current.deletedAt) throw new NotFound(`Session ${sessionId} was deleted while waiting for the agent`);
        if (current.status === 'idle') return { messageId: message.id, status: current.status };
        if (Date.now() >= deadline) {
          throw new GatewayTimeout(
            `The agent did not finish within waitTimeoutMs=${timeoutMs}; the turn continues. Message ${message.id} is stored: poll GET /api/v0/sessions/${session.id} until status is idle`,
            { metadata: { messageId: message.id, status: current.status, waitTimeoutMs: timeoutMs } },
          );
        }
        await sleep(Math.min(deps.waitPollMs ?? 100, Math.max(1, deadline - Date.now())));
      }
    },

    decideApproval: (principal: Principal, sessionId: string, toolUseId: string, input: DecisionInput) =>
      decideApproval(deps, principal, sessionId, toolUseId, input),

    async addCheckpoints(principal: Principal, sessionId: string, input: CheckpointsInput) {
      const session = await reachableSession(db, principal, sessionId);
      return { checkpointIds: await recordCheckpoints(db, session, input, clock.now()) };
    },
  };
}

export type SessionsService = ReturnType<typeof createSessionsService>;
