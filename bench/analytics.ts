/**
 * Analytics at a year of data, on PostgreSQL: seeds 1,000 users x 365 days, then times each
 * endpoint over the whole year through HTTP and the roll-up of one day. Run on demand:
 *
 *   node bench/analytics.ts [--users 1000] [--days 365] [--runs 7]
 *
 * Goals: each endpoint's median under 50 ms, one day's roll-up under 2 s. Beside each median it
 * prints two baselines timed in the same run: the smallest authenticated analytics request (one
 * day of /activity: HTTP, authentication and the date checks) and the transfer alone of a body of
 * the same size from a plain node:http server answering a ready buffer, the floor no handler can
 * go under.
 */
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { issueApiKey } from '../src/auth/issue-api-key.ts';
import { compose } from '../src/compose.ts';
import { loadConfig } from '../src/config.ts';
import { fixedClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { createLogger } from '../src/lib/logger.ts';
import { openBenchPostgres } from './postgres-database.ts';
import { addDays } from '../src/modules/analytics/dates.ts';
import { rollupDays } from '../src/modules/analytics/rollup.ts';
import { seedAnalytics } from '../src/modules/analytics/seed.ts';
import { listenOnFreePort } from '../test/support/http.ts';

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
const spread = (xs: number[]) => `${ms(median(xs))} (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`;

/** Median time to fetch a ready `bytes`-long body from a bare node:http server. */
async function transferFloor(bytes: number): Promise<number> {
  const body = Buffer.alloc(bytes, 'x');
  const srv = http.createServer((_req, res) => res.end(body));
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  const times: number[] = [];
  for (let i = 0; i <= RUNS; i++) {
    const t = performance.now();
    await (await fetch(`http://127.0.0.1:${port}/`)).arrayBuffer();
    if (i > 0) times.push(performance.now() - t);
  }
  await new Promise((resolve) => srv.close(resolve));
  return median(times);
}

const log = createLogger({ level: 'warn' });
const { db, stop } = await openBenchPostgres('bench', log);
try {
  const prisma = db.prisma;
  const org = await prisma.organization.create({ data: { id: newId('org'), name: 'bench', createdAt: new Date(`${FIRST}T00:00:00Z`) } });
  const user = await prisma.user.create({ data: { id: newId('usr'), email: 'manager@bench.test' } });
  await prisma.membership.create({ data: { id: newId('mem'), organizationId: org.id, userId: user.id, role: 'manager' } });
  const key = await issueApiKey(prisma, { organizationId: org.id, owner: { userId: user.id }, name: 'bench', now: new Date() });

  let t = performance.now();
  const seeded = await seedAnalytics(prisma, {
    organizationId: org.id,
    users: USERS,
    days: DAYS,
    endDay: LAST,
    seed: 1,
    onDay: (day) => day.endsWith('-01') && process.stdout.write(`  seeding ${day}\n`),
  });
  const seedSeconds = (performance.now() - t) / 1000;
  const [{ user_days }] = await prisma.$queryRawUnsafe<[{ user_days: number }]>(`SELECT count(*)::int AS user_days FROM analytics_user_days`);
  console.log(
    `seeded ${seeded.events.toLocaleString()} events (${user_days.toLocaleString()} active user-days) for ${USERS} users x ${DAYS} days in ${seedSeconds.toFixed(1)} s (insert + roll-up of every day)`,
  );
  await prisma.$executeRawUnsafe('VACUUM ANALYZE');

  const rollups: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    t = performance.now();
    await rollupDays(prisma, org.id, [addDays(LAST, -3)]);
    rollups.push(performance.now() - t);
  }
  console.log(`roll-up of one day (a weekday, windows of the 29 days after it refreshed): median ${spread(rollups)} of ${RUNS} (goal < 2000 ms)`);

  const dataDir = mkdtempSync(join(tmpdir(), 'agentplane-bench-'));
  const plane = await compose({ config: loadConfig({ AGENTPLANE_DATA_DIR: dataDir }), db, log, overrides: { clock, work: false, schedules: false } });
  await plane.start();
  const { app } = plane;
  const api = await listenOnFreePort(app);
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
  /** Times of RUNS fetches of `path` after a warm-up, and the body's size. */
  async function timeGet(path: string): Promise<{ times: number[]; bytes: number }> {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i <= RUNS; i++) {
      t = performance.now();
      const res = await fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${key.value}` } });
      const body = await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${Buffer.from(body).toString()}`);
      if (i > 0) times.push(performance.now() - t);
      bytes = body.byteLength;
    }
    return { times, bytes };
  }
  const smallest = await timeGet(`/api/v1/analytics/activity?startDate=${LAST}&endDate=${LAST}`);
  console.log(`\nendpoint over ${FIRST}..${LAST}: median (min-max) of ${RUNS} after a warm-up; goal < 50 ms`);
  console.log(`baselines: smallest analytics request (one day of /activity) ${spread(smallest.times)}; transfer alone of the same body, per row`);
  for (const path of paths) {
    const { times, bytes } = await timeGet(path);
    const name = path.replace(`?${year}`, '').replace('/api/v1/analytics', '');
    console.log(
      `  ${name.padEnd(28)} ${spread(times).padStart(20)}  ${(bytes / 1e6).toFixed(2).padStart(6)} MB  transfer alone ${ms(await transferFloor(bytes)).padStart(9)}`,
    );
  }
  await api.close();
  await plane.stop(5_000);
} finally {
  await stop();
}
