import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnalyticsEvent } from '../../src/modules/analytics/events.ts';
import { publish } from '../../src/modules/events/publish.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';
import { createOrgFixture } from '../support/api.ts';

/** publish's `analytics`: a change's events and its analytics events in one statement, committed or rolled back together. */
describe.each(BACKENDS)('events with their analytics in one statement (%s)', (backend) => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let orgId: string;
  let userId: string;

  beforeAll(async () => {
    db = await openTestDatabase(backend);
    const org = await createOrgFixture(db, 'publish-analytics');
    orgId = org.id;
    userId = org.members.owner.userId;
  });

  afterAll(async () => {
    await db?.dispose();
  });

  const idle = (n: number) => ({ type: 'session.idle' as const, organizationId: orgId, data: { n } });
  const call = (tool: string): AnalyticsEvent => ({
    kind: 'tool_call',
    organizationId: orgId,
    userId,
    occurredAt: new Date('2026-12-01T10:00:00Z'),
    tool,
    autonomyLevel: 'auto-high',
  });
  const stored = async () => ({
    events: (await db.prisma.event.findMany({ where: { organizationId: orgId }, orderBy: { id: 'asc' } })).map((e) => (e.data as { n: number }).n),
    tools: (await db.prisma.analyticsEvent.findMany({ where: { organizationId: orgId }, orderBy: { tool: 'asc' } })).map((e) => e.tool),
  });

  it('stores both, the events numbered in order and every analytics column as recordEvents stores it', async () => {
    await db.prisma.$transaction((tx) => publish(tx, [idle(1), idle(2)], { analytics: [call('run_command'), call('read_file')] }));
    expect(await stored()).toEqual({ events: [1, 2], tools: ['read_file', 'run_command'] });
    const row = await db.prisma.analyticsEvent.findFirstOrThrow({ where: { organizationId: orgId, tool: 'run_command' } });
    expect(row).toMatchObject({
      kind: 'tool_call',
      userId,
      autonomyLevel: 'auto-high',
      occurredAt: new Date('2026-12-01T10:00:00Z'),
      sessionId: null,
      inputTokens: 0n,
    });
  });

  it('rolls both back with the transaction', async () => {
    const failed = db.prisma.$transaction(async (tx) => {
      await publish(tx, idle(3), { analytics: [call('write_file')] });
      throw new Error('the change failed');
    });
    await expect(failed).rejects.toThrow('the change failed');
    expect(await stored()).toEqual({ events: [1, 2], tools: ['read_file', 'run_command'] });
  });

  it('stores the analytics alone when there is no event, and neither when an analytics event is invalid', async () => {
    await publish(db.prisma, [], { analytics: [call('edit_file')] });
    expect((await stored()).tools).toEqual(['edit_file', 'read_file', 'run_command']);
    const invalid = { ...call('x'), userId: '' };
    await expect(publish(db.prisma, idle(4), { analytics: [invalid] })).rejects.toThrow(/analytics event 0/);
    expect(await stored()).toEqual({ events: [1, 2], tools: ['edit_file', 'read_file', 'run_command'] });
  });
});
