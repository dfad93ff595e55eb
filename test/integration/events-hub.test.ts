import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/logger.ts';
import { createEventHub, type EventHub } from '../../src/modules/events/hub.ts';
import { publish } from '../../src/modules/events/publish.ts';
import type { WireEvent } from '../../src/modules/events/wire.ts';
import { createOrgFixture } from '../support/api.ts';
import { BACKENDS, openTestDatabase } from '../support/test-db.ts';
import { waitFor } from '../support/wait.ts';

/** The event store and each process's listener on PostgreSQL, where several connections write at once. */
describe.runIf(BACKENDS.includes('postgres'))('events on PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof openTestDatabase>>;
  let hub: EventHub;
  let orgId: string;
  const heard: WireEvent[] = [];

  beforeAll(async () => {
    db = await openTestDatabase('postgres');
    orgId = (await createOrgFixture(db, 'hub')).id;
    hub = createEventHub({ db: db.prisma, listen: db.listen, log: createLogger({ level: 'silent' }) });
    await hub.start();
    hub.subscribe({ key: `org:${orgId}`, deliver: (e) => heard.push(e), end: () => {} });
  });

  afterAll(async () => {
    await hub?.close();
    await db?.dispose();
  });

  const idle = (n: number) => ({ type: 'session.idle' as const, organizationId: orgId, data: { n } });

  it('makes ids visible in commit order: a later writer waits for an earlier one to commit', async () => {
    const started = Date.now();
    let slowCommitted = 0;
    const slow = db.prisma.$transaction(async (tx) => {
      await publish(tx, idle(1));
      await sleep(400);
      slowCommitted = Date.now();
    });
    await sleep(100);
    await publish(db.prisma, idle(2));
    const fastCommitted = Date.now();
    await slow;
    // Without the lock the second write would commit a higher id while the first, lower one was still invisible.
    expect(fastCommitted).toBeGreaterThanOrEqual(slowCommitted);
    expect(fastCommitted - started).toBeGreaterThanOrEqual(350);
    const rows = await db.prisma.event.findMany({ where: { organizationId: orgId }, orderBy: { id: 'asc' } });
    expect(rows.map((r) => (r.data as { n: number }).n)).toEqual([1, 2]);
    await waitFor('both heard', () => heard.length >= 2);
    expect(heard.map((e) => (e.data as { n: number }).n)).toEqual([1, 2]);
  });

  it('hears what was published while its connection was down, once it reconnects', async () => {
    heard.length = 0;
    if (db.kind !== 'postgres') throw new Error('this test needs PostgreSQL');
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      const { rowCount } = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%agentplane_events%' AND datname = current_database()`,
      );
      expect(rowCount).toBe(1);
      await publish(db.prisma, [idle(3), idle(4)]);
      await waitFor('the events published meanwhile', () => heard.length >= 2, 10_000);
      expect(heard.map((e) => (e.data as { n: number }).n)).toEqual([3, 4]);
      await publish(db.prisma, idle(5));
      await waitFor('a live event after reconnecting', () => heard.length >= 3, 5_000);
      expect(heard.map((e) => e.id)).toEqual([...new Set(heard.map((e) => e.id))]);
    } finally {
      await admin.end();
    }
  });
});
