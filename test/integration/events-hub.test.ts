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

  it('numbers events in commit order, without a writer waiting for another to commit', async () => {
    let slowCommitted = 0;
    const slow = db.prisma.$transaction(async (tx) => {
      await publish(tx, idle(1));
      await sleep(400);
      slowCommitted = Date.now();
    });
    await sleep(100);
    await publish(db.prisma, idle(2));
    const fastCommitted = Date.now();
    // The hub reads event 2 while event 1's transaction is still open…
    await waitFor('the later writer heard first', () => heard.length >= 1);
    await slow;
    expect(fastCommitted).toBeLessThan(slowCommitted);
    // …and still hears event 1: its id is drawn at its commit, after event 2's.
    const rows = await db.prisma.event.findMany({ where: { organizationId: orgId }, orderBy: { id: 'asc' } });
    expect(rows.map((r) => (r.data as { n: number }).n)).toEqual([2, 1]);
    expect(rows.every((r) => r.id > 0n)).toBe(true);
    await waitFor('both heard', () => heard.length >= 2);
    expect(heard.map((e) => (e.data as { n: number }).n)).toEqual([2, 1]);
  });

  it('numbers the events of one transaction in the order they were published', async () => {
    heard.length = 0;
    await db.prisma.$transaction(async (tx) => {
      await publish(tx, [idle(10), idle(11)]);
      await publish(tx, idle(12));
    });
    await waitFor('three heard', () => heard.length >= 3);
    expect(heard.map((e) => (e.data as { n: number }).n)).toEqual([10, 11, 12]);
    expect(heard.map((e) => BigInt(e.id!))).toEqual([...heard.map((e) => BigInt(e.id!))].sort((x, y) => (x < y ? -1 : 1)));
  });

  it("numbers a transaction's events together at its commit, each notifying its id, heard once", async () => {
    if (db.kind !== 'postgres') throw new Error('this test needs PostgreSQL');
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const notified: string[] = [];
    listener.on('notification', (n) => notified.push(n.payload ?? ''));
    await listener.query('LISTEN agentplane_events');
    try {
      heard.length = 0;
      // A publishes, B publishes and commits, A publishes twice more (once in a savepoint it rolls back) and commits.
      let release!: () => void;
      const bDone = new Promise<void>((resolve) => (release = resolve));
      const a = db.prisma.$transaction(async (tx) => {
        await publish(tx, idle(20));
        await bDone;
        await publish(tx, idle(22));
        await tx.$executeRaw`SAVEPOINT dropped`;
        await publish(tx, idle(99));
        await tx.$executeRaw`ROLLBACK TO SAVEPOINT dropped`;
        await publish(tx, idle(23));
      });
      await db.prisma.$transaction(async (tx) => publish(tx, idle(21)));
      release();
      await a;
      await waitFor('four heard', () => heard.length >= 4);
      const rows = await db.prisma.event.findMany({ where: { organizationId: orgId, type: 'session.idle' }, orderBy: { id: 'desc' }, take: 4 });
      const byN = new Map(rows.map((r) => [(r.data as { n: number }).n, r.id]));
      expect([...byN.keys()].sort()).toEqual([20, 21, 22, 23]);
      // B's event first; A's three in the order published, consecutive.
      expect(byN.get(21)! < byN.get(20)!).toBe(true);
      expect([byN.get(22)! - byN.get(20)!, byN.get(23)! - byN.get(20)!]).toEqual([1n, 2n]);
      await waitFor('four notifications', () => notified.length >= 4);
      await sleep(200);
      expect(notified).toEqual([21, 20, 22, 23].map((n) => String(byN.get(n))));
      // A's three notifications arrive together: the hub hands each event on once.
      expect(heard.map((e) => (e.data as { n: number }).n)).toEqual([21, 20, 22, 23]);
    } finally {
      await listener.end();
    }
  });

  it('reads no event while no stream is connected here, and starts the first one from the latest', async () => {
    let reads = 0;
    const counted = {
      event: {
        findMany: (args: Parameters<typeof db.prisma.event.findMany>[0]) => {
          reads++;
          return db.prisma.event.findMany(args);
        },
        findFirst: (args: Parameters<typeof db.prisma.event.findFirst>[0]) => db.prisma.event.findFirst(args),
      },
    } as unknown as typeof db.prisma;
    const quiet = createEventHub({ db: counted, listen: db.listen, log: createLogger({ level: 'silent' }) });
    await quiet.start();
    try {
      await db.prisma.$transaction(async (tx) => publish(tx, [idle(30), idle(31)]));
      const last = (await db.prisma.event.findFirst({ orderBy: { id: 'desc' } }))!.id;
      await waitFor('the cursor at the latest event', () => quiet.cursor() === last);
      expect(reads).toBe(0);
      const got: WireEvent[] = [];
      quiet.subscribe({ key: `org:${orgId}`, deliver: (e) => got.push(e), end: () => {} });
      await publish(db.prisma, idle(32));
      await waitFor('the next event', () => got.length >= 1);
      await sleep(100);
      expect(got.map((e) => (e.data as { n: number }).n)).toEqual([32]);
      expect(reads).toBeGreaterThan(0);
    } finally {
      await quiet.close();
    }
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
