import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.ts';
import type { AnalyticsEvent } from '../../src/modules/analytics/events.ts';
import { SessionStateChanged, storeSessionChange } from '../../src/modules/sessions/session-change.ts';
import { appendMessage, chargeSession } from '../../src/modules/sessions/store.ts';
import { turnNotAdmitted } from '../../src/modules/sessions/turn-admission.ts';
import { createOrgFixture } from '../support/api.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';

/**
 * A change to a session (appendMessage, chargeSession) is one statement, atomic without a
 * transaction of the caller's: the message, the session's counters, its ancestors' inclusive
 * usage, the events (the message's with the seq its insert drew) and the analytics are stored
 * together, or none of them is.
 */
describe.each(BACKENDS)('a session change in one statement (%s)', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let orgId: string;
  let userId: string;

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    const org = await createOrgFixture(db, `session-change-${backend}`);
    orgId = org.id;
    userId = org.members.owner.userId;
  });
  afterAll(async () => {
    await db?.dispose();
  });

  const newSession = async (parentSessionId?: string) => {
    const id = newId('ses');
    await db.prisma.session.create({
      data: { id, organizationId: orgId, ownerKind: 'human', ownerId: userId, computerId: 'cmp_none', cwd: '/', parentSessionId },
    });
    return id;
  };
  const analytic = (sessionId: string, tool: string): AnalyticsEvent => ({
    kind: 'tool_call',
    organizationId: orgId,
    userId,
    sessionId,
    occurredAt: new Date('2026-12-02T10:00:00Z'),
    tool,
    autonomyLevel: 'auto-high',
  });
  const storedOf = async (sessionId: string) => ({
    messages: await db.prisma.sessionMessage.findMany({ where: { sessionId }, orderBy: { seq: 'asc' } }),
    events: await db.prisma.event.findMany({ where: { sessionId }, orderBy: { id: 'asc' } }),
    analytics: (await db.prisma.analyticsEvent.findMany({ where: { sessionId }, orderBy: { tool: 'asc' } })).map((a) => a.tool),
    session: await db.prisma.session.findUniqueOrThrow({ where: { id: sessionId } }),
  });

  it('stores the message, its counters, usage, events and analytics, the event carrying the seq the insert drew', async () => {
    const id = await newSession();
    const now = new Date('2026-12-02T10:00:00.123Z');
    await appendMessage(db.prisma, id, { role: 'user', content: [{ type: 'text', text: 'first' }], queueStatus: 'consumed' }, now);
    const row = await appendMessage(
      db.prisma,
      id,
      { role: 'assistant', content: [{ type: 'text', text: 'done' }], modelId: 'coder', extra: { visibility: 'visible' } as never },
      now,
      [
        { inputTokens: 10, outputTokens: 4, serviceCredits: 0.5 },
        { inputTokens: 5, cacheReadTokens: 2, serviceCredits: 0.25 },
      ],
      {
        session: { title: 'A title' },
        events: [{ type: 'session.status', sessionId: id, data: { status: 'running' } }],
        analytics: [analytic(id, 'run_command')],
      },
    );
    const stored = await storedOf(id);
    expect(stored.messages.map((m) => m.id)).toEqual([expect.any(String), row.id]);
    // What appendMessage answers is what was stored.
    const { sessionStatus, ...answered } = row;
    expect(sessionStatus).toBe('idle');
    expect(stored.messages[1]).toEqual(answered);
    expect(row.seq).toBeGreaterThan(stored.messages[0]!.seq);
    expect(stored.events.map((e) => e.type)).toEqual([
      'session.message.created',
      'session.usage',
      'session.usage',
      'session.message.created',
      'session.status',
    ]);
    expect(stored.events.map((e) => e.organizationId)).toEqual(Array(5).fill(orgId));
    const created = stored.events[3]!.data as { message: { id: string; seq: number; role: string; modelId: string; createdAt: number } };
    expect(created.message).toMatchObject({ id: row.id, seq: Number(row.seq), role: 'assistant', modelId: 'coder', createdAt: now.getTime() });
    expect((stored.events[0]!.data as { message: { seq: number } }).message.seq).toBe(Number(stored.messages[0]!.seq));
    expect(stored.analytics).toEqual(['run_command']);
    expect(stored.session).toMatchObject({
      title: 'A title',
      messageCount: 2,
      inputTokens: 15n,
      outputTokens: 4n,
      cacheReadTokens: 2n,
      serviceCredits: 0.75,
      inclInputTokens: 15n,
      inclServiceCredits: 0.75,
      updatedAt: now,
    });
  });

  it('adds usage up the parent chain, and ends a chain that loops', async () => {
    const top = await newSession();
    const child = await newSession(top);
    const grandchild = await newSession(child);
    await sleep(5);
    const before = new Date();
    expect(await chargeSession(db.prisma, grandchild, { usage: [{ inputTokens: 7, serviceCredits: 1 }], activeMs: 300 })).toBe('idle');
    const sessions = await db.prisma.session.findMany({ where: { id: { in: [top, child, grandchild] } } });
    const byId = new Map(sessions.map((s) => [s.id, s]));
    expect(byId.get(grandchild)).toMatchObject({ inputTokens: 7n, inclInputTokens: 7n, assistantActiveMs: 300n, serviceCredits: 1 });
    expect(byId.get(child)).toMatchObject({ inputTokens: 0n, inclInputTokens: 7n, inclServiceCredits: 1, assistantActiveMs: 0n });
    expect(byId.get(top)).toMatchObject({ inputTokens: 0n, inclInputTokens: 7n, inclServiceCredits: 1 });
    // Each session changed is stamped, with the time of day when the change names none.
    for (const s of sessions) expect(s.updatedAt.getTime()).toBeGreaterThanOrEqual(before.getTime());

    // A chain that loops back (never made by the API) is walked once.
    await db.prisma.session.update({ where: { id: top }, data: { parentSessionId: grandchild } });
    await chargeSession(db.prisma, grandchild, { usage: [{ inputTokens: 1 }] });
    const after = await db.prisma.session.findMany({ where: { id: { in: [top, child, grandchild] } }, orderBy: { id: 'asc' } });
    expect(Object.fromEntries(after.map((s) => [s.id, s.inclInputTokens]))).toEqual({ [top]: 8n, [child]: 8n, [grandchild]: 8n });
  });

  it('stores nothing of a change that fails: an invalid analytics event, a taken message id, a session that is not there', async () => {
    const id = await newSession();
    const before = await storedOf(id);
    const invalid = { ...analytic(id, 'x'), userId: '' };
    await expect(
      appendMessage(db.prisma, id, { role: 'user', content: [{ type: 'text', text: 'no' }] }, new Date(), [{ inputTokens: 3 }], { analytics: [invalid] }),
    ).rejects.toThrow(/analytics event 0/);
    // A message whose id is taken fails its insert, in the statement that also updates the session and stores events.
    const taken = await appendMessage(db.prisma, id, { role: 'user', content: [{ type: 'text', text: 'kept' }] }, new Date());
    const kept = await storedOf(id);
    expect(kept.messages).toHaveLength(before.messages.length + 1);
    const { seq: _seq, ...again } = { ...taken, content: [{ type: 'text', text: 'again' }], createdAt: new Date(), updatedAt: new Date() };
    await expect(
      storeSessionChange(db.prisma, id, {
        message: again,
        charges: { messages: 1, usage: [{ inputTokens: 9 }], now: new Date() },
        events: [{ type: 'session.status', sessionId: id, data: { status: 'running' } }],
        analytics: [analytic(id, 'edit_file')],
      }),
    ).rejects.toThrow();
    expect(await storedOf(id)).toEqual(kept);

    const missing = newId('ses');
    await expect(
      appendMessage(db.prisma, missing, { role: 'user', content: [{ type: 'text', text: 'lost' }] }, new Date(), [{ inputTokens: 1 }], {
        events: [{ type: 'session.status', sessionId: missing, organizationId: orgId, data: { status: 'running' } }],
        analytics: [analytic(missing, 'lost')],
      }),
    ).rejects.toThrow(SessionStateChanged);
    await expect(chargeSession(db.prisma, missing, { activeMs: 1 })).rejects.toThrow(SessionStateChanged);
    expect(await db.prisma.event.count({ where: { sessionId: missing } })).toBe(0);
    expect(await db.prisma.analyticsEvent.count({ where: { sessionId: missing } })).toBe(0);
    expect(await db.prisma.sessionMessage.count({ where: { sessionId: missing } })).toBe(0);
  });

  it("stores a user message's turn only in the state it expects: it begins one, waits for one, or queues", async () => {
    const limits = { perOrganization: 100, perOwner: 100 };
    const user = (text: string, queueStatus: 'queued' | 'consumed') => ({ role: 'user' as const, content: [{ type: 'text' as const, text }], queueStatus });
    const id = await newSession();
    await db.prisma.session.update({ where: { id }, data: { interruptRequestedAt: new Date() } });
    const now = new Date('2026-12-02T11:00:00.000Z');
    const begun = await appendMessage(db.prisma, id, user('go', 'consumed'), now, [], {
      turn: { begins: { heartbeat: now, limits } },
      events: [{ type: 'session.status', sessionId: id, data: { status: 'running' } }],
    });
    expect(begun.sessionStatus).toBe('running');
    expect(await db.prisma.session.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'running', turnHeartbeatAt: now, interruptRequestedAt: null });

    // Running: another message may only queue; one that expected to begin or wait stores nothing.
    const before = await storedOf(id);
    for (const turn of [{ begins: { heartbeat: now, limits } }, { waits: true as const }]) {
      await expect(appendMessage(db.prisma, id, user('again', 'consumed'), now, [], { turn, analytics: [analytic(id, 'nope')] })).rejects.toThrow(
        SessionStateChanged,
      );
    }
    expect(await storedOf(id)).toEqual(before);
    expect((await appendMessage(db.prisma, id, user('next', 'queued'), now, [], { turn: { queues: true } })).sessionStatus).toBe('running');

    // Idle: a message may not queue behind a turn that is not there; it waits for a slot.
    await db.prisma.session.update({ where: { id }, data: { status: 'idle' } });
    await expect(appendMessage(db.prisma, id, user('behind', 'queued'), now, [], { turn: { queues: true } })).rejects.toThrow(SessionStateChanged);
    expect((await appendMessage(db.prisma, id, user('wait', 'queued'), now, [], { turn: { waits: true } })).sessionStatus).toBe('pending');
    expect((await storedOf(id)).messages.map((m) => [(m.content as { text: string }[])[0]!.text, m.queueStatus])).toEqual([
      ['go', 'consumed'],
      ['next', 'queued'],
      ['wait', 'queued'],
    ]);

    // A turn begun over the limits fails its commit, and nothing of it stays.
    await db.prisma.session.update({ where: { id }, data: { status: 'running' } });
    const other = await newSession();
    const refused = db.prisma.$transaction((tx) =>
      appendMessage(tx, other, user('over', 'consumed'), now, [], { turn: { begins: { heartbeat: now, limits: { perOrganization: 100, perOwner: 1 } } } }),
    );
    await expect(refused).rejects.toSatisfy(turnNotAdmitted);
    expect(await storedOf(other)).toMatchObject({ messages: [], events: [], session: { status: 'idle', messageCount: 0 } });
  });
});
