/**
 * Analytics at a year of data, on PostgreSQL: seeds 1,000 users x 365 days, then times each
 * endpoint over the whole year through HTTP and the roll-up of one day. Run on demand:
 *
 *   node bench/analytics.ts [--users 1000] [--days 365] [--runs 7]
 *
 * Goals: each endpoint's median under 50 ms, one day's roll-up under 2 s.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createApp } from '../src/app.ts';
import { issueApiKey } from '../src/auth/issue-api-key.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/client.ts';
import { migrateDatabase } from '../src/db/migrations.ts';
import { fixedClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { createLogger } from '../src/lib/logger.ts';
import { addDays } from '../src/modules/analytics/dates.ts';
import { rollupDays } from '../src/modules/analytics/rollup.ts';
import { seedAnalytics } from '../src/modules/analytics/seed.ts';
import { createProviderRegistry } from '../src/provisioning/providers/registry.ts';
import { listenOnFreePort } from '../test/support/http.ts';
import { startPostgres } from '../test/support/postgres-server.ts';

const { values: args } = parseArgs({
  options: { users: { type: 'string', default: '1000' }, days: { type: 'string', default: '365' }, runs: { type: 'string', default: '7' } },
});
const USERS = Number(args.users);
const DAYS = Number(args.days);
const RUNS = Number(args.runs);
const FIRST = '2026-01-14';
const LAST = addDays(FIRST, DAYS - 1);
const clock = fixedClock(new Date(`${addDays(LAST, 1)}T06:00:00Z`));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (n: number) => `${n.toFixed(1)} ms`;

const server = await startPostgres();
if (!server) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
const log = createLogger({ level: 'warn' });
try {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('CREATE DATABASE bench');
  await admin.end();
  const db = await openDatabase({ databaseUrl: server.url.replace(/\/postgres$/, '/bench'), dataDir: '/tmp' });
  await migrateDatabase(db, log);
  const prisma = db.prisma;
  const org = await prisma.organization.create({ data: { id: newId('org'), name: 'bench', createdAt: new Date(`${FIRST}T00:00:00Z`) } });
  const user = await prisma.user.create({ data: { id: newId('usr'), email: 'manager@bench.test' } });
  await prisma.membership.create({ data: { id: newId('mem'), organizationId: org.id, userId: user.id, role: 'manager' } });
  const key = await issueApiKey(prisma, { organizationId: org.id, owner: { userId: user.id }, name: 'bench', now: new Date() });

  let t = performance.now();
  const seeded = await seedAnalytics(prisma, {
    organizationId: org.id, users: USERS, days: DAYS, endDay: LAST, seed: 1,
    onDay: (day) => day.endsWith('-01') && process.stdout.write(`  seeding ${day}\n`),
  });
  const seedSeconds = (performance.now() - t) / 1000;
  const [{ user_days }] = await prisma.$queryRawUnsafe<[{ user_days: number }]>(`SELECT count(*)::int AS user_days FROM analytics_user_days`);
  console.log(`seeded ${seeded.events.toLocaleString()} events (${user_days.toLocaleString()} active user-days) for ${USERS} users x ${DAYS} days in ${seedSeconds.toFixed(1)} s (insert + roll-up of every day)`);
  await prisma.$executeRawUnsafe('VACUUM ANALYZE');

  const rollups: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    t = performance.now();
    await rollupDays(prisma, org.id, [addDays(LAST, -3)]);
    rollups.push(performance.now() - t);
  }
  console.log(`roll-up of one day (a weekday, windows of the 29 days after it refreshed): median ${ms(median(rollups))} (goal < 2000 ms)`);

  const { app } = createApp({
    config: loadConfig({}), prisma, log, clock, providers: createProviderRegistry([]), pendingMigrations: async () => [],
  });
  const http = await listenOnFreePort(app);
  const year = `startDate=${FIRST}&endDate=${LAST}`;
  const paths = [
    `/api/v1/analytics/tokens?${year}`,
    `/api/v1/analytics/tokens?${year}&group_by=model`,
    `/api/v1/analytics/tools?${year}`,
    `/api/v1/analytics/tools?${year}&group_by=tool_name`,
    `/api/v1/analytics/activity?${year}`,
    `/api/v1/analytics/activity?${year}&group_by=client`,
    `/api/v1/analytics/productivity?${year}`,
    `/api/v1/analytics/users?${year}`,
    `/api/v1/analytics/users?${year}&limit=100`,
  ];
  console.log(`\nendpoint over ${FIRST}..${LAST} (median of ${RUNS} after a warm-up; goal < 50 ms)`);
  for (const path of paths) {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i <= RUNS; i++) {
      t = performance.now();
      const res = await fetch(`${http.url}${path}`, { headers: { authorization: `Bearer ${key.value}` } });
      const body = await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${Buffer.from(body).toString()}`);
      if (i > 0) times.push(performance.now() - t);
      bytes = body.byteLength;
    }
    console.log(`  ${path.replace(`?${year}`, '').replace('/api/v1/analytics', '').padEnd(28)} ${ms(median(times)).padStart(10)}  ${(bytes / 1e6).toFixed(2).padStart(7)} MB`);
  }
  await http.close();
  await db.close();
} finally {
  server.stop();
}
