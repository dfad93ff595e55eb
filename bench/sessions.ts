/**
 * Message-list latency on a session with 100,000 messages, on PostgreSQL, through HTTP: the first
 * page, a deep page (about 90% of the way back) and a role-filtered deep page, against two floors
 * (an unauthenticated bare route and the one-row session detail). Run on demand:
 *
 *   node bench/sessions.ts [--messages 100000] [--runs 21]
 *
 * Goal: p50 under 10 ms for the first and the deep page.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createApp } from '../src/app.ts';
import { issueApiKey } from '../src/auth/issue-api-key.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/client.ts';
import { migrateDatabase } from '../src/db/migrations.ts';
import { encodeOpaqueCursor } from '../src/http/pagination.ts';
import { jobsFor } from '../src/jobs/catalog.ts';
import { createJobQueue } from '../src/jobs/queue.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { createLogger } from '../src/lib/logger.ts';
import { startMachineAccess } from '../src/modules/computers/machine-access.ts';
import { createProviderRegistry } from '../src/provisioning/providers/registry.ts';
import { listenOnFreePort } from '../test/support/http.ts';
import { startPostgres } from '../test/support/postgres-server.ts';
import { managedJobDeps } from '../src/provisioning/provisioner.ts';

const { values: args } = parseArgs({
  options: { messages: { type: 'string', default: '100000' }, runs: { type: 'string', default: '21' } },
});
const MESSAGES = Number(args.messages);
const RUNS = Number(args.runs);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)]!;
const ms = (n: number) => `${n.toFixed(2)} ms`;

const server = await startPostgres();
if (!server) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
const log = createLogger({ level: 'warn' });
try {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('CREATE DATABASE bench_sessions');
  await admin.end();
  const db = await openDatabase({ databaseUrl: server.url.replace(/\/postgres$/, '/bench_sessions'), dataDir: '/tmp' });
  await migrateDatabase(db, log);
  const prisma = db.prisma;
  const org = await prisma.organization.create({ data: { id: newId('org'), name: 'bench' } });
  const user = await prisma.user.create({ data: { id: newId('usr'), email: 'user@bench.test' } });
  await prisma.membership.create({ data: { id: newId('mem'), organizationId: org.id, userId: user.id, role: 'user' } });
  const key = await issueApiKey(prisma, { organizationId: org.id, owner: { userId: user.id }, name: 'bench', now: new Date() });
  const sessionId = newId('sess');
  await prisma.session.create({
    data: { id: sessionId, organizationId: org.id, ownerKind: 'human', ownerId: user.id, computerId: 'cmp_bench', cwd: '/', settings: { model: 'm' } },
  });
  // A second session's messages interleave, as on a busy server.
  const other = newId('sess');
  await prisma.session.create({
    data: { id: other, organizationId: org.id, ownerKind: 'human', ownerId: user.id, computerId: 'cmp_bench', cwd: '/', settings: { model: 'm' } },
  });

  let t = performance.now();
  for (const [id, n] of [[sessionId, MESSAGES], [other, MESSAGES]] as const) {
    await prisma.$executeRawUnsafe(
      `INSERT INTO session_messages (id, session_id, role, content, created_at, updated_at)
       SELECT $1 || g, $2, (ARRAY['user','assistant','tool'])[1 + g % 3],
              jsonb_build_array(jsonb_build_object('type', 'text', 'text', repeat('lorem ipsum ', 20) || g)),
              now() - make_interval(secs => $3 - g), now()
       FROM generate_series(1, $3::int) AS g`,
      `msg_${id}_`,
      id,
      n,
    );
    await prisma.session.update({ where: { id }, data: { messageCount: n } });
  }
  await prisma.$executeRawUnsafe('VACUUM ANALYZE');
  console.log(`inserted ${(2 * MESSAGES).toLocaleString()} messages (two sessions) in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  const deepSeq = async (role?: string) => {
    const rows = await prisma.sessionMessage.findMany({
      where: { sessionId, ...(role ? { role } : {}) },
      orderBy: { seq: 'desc' },
      skip: Math.floor((role ? MESSAGES / 3 : MESSAGES) * 0.9),
      take: 1,
      select: { seq: true },
    });
    return encodeOpaqueCursor({ s: rows[0]!.seq.toString() });
  };

  const dataDir = mkdtempSync(join(tmpdir(), 'agentplane-bench-'));
  const machines = await startMachineAccess({ dataDir, host: '127.0.0.1' }, prisma, log);
  const queue = createJobQueue(db, { log, jobs: jobsFor({ prisma, clock: systemClock, dataDir, ...machines, ...managedJobDeps(dataDir, machines.secrets) }) });
  await queue.start();
  const { app } = createApp({
    config: loadConfig({}), prisma, log, clock: systemClock, providers: createProviderRegistry([]), queue, machines, pendingMigrations: async () => [],
  });
  const api = await listenOnFreePort(app);
  const base = `/api/v0/sessions/${sessionId}`;
  const cases: [string, string, boolean][] = [
    ['bare route (/healthz, no auth)', '/healthz', false],
    ['session detail (one row)', base, true],
    ['messages, first page (20)', `${base}/messages`, true],
    ['messages, first page (100)', `${base}/messages?limit=100`, true],
    ['messages, deep page (20, 90% back)', `${base}/messages?cursor=${await deepSeq()}`, true],
    ['messages, deep page (100, 90% back)', `${base}/messages?limit=100&cursor=${await deepSeq()}`, true],
    ['messages, role=tool deep page (20)', `${base}/messages?role=tool&cursor=${await deepSeq('tool')}`, true],
  ];
  console.log(`\nover HTTP, ${RUNS} runs after 3 warm-ups (goal p50 < 10 ms for the message pages)`);
  for (const [label, path, auth] of cases) {
    const times: number[] = [];
    for (let i = 0; i < RUNS + 3; i++) {
      t = performance.now();
      const res = await fetch(`${api.url}${path}`, { headers: auth ? { authorization: `Bearer ${key.value}` } : {} });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body}`);
      if (i >= 3) times.push(performance.now() - t);
    }
    console.log(`  ${label.padEnd(40)} p50 ${ms(median(times)).padStart(10)}   p90 ${ms(p90(times)).padStart(10)}`);
  }
  const plan = await prisma.$queryRawUnsafe<{ 'QUERY PLAN': string }[]>(
    `EXPLAIN ANALYZE SELECT * FROM session_messages WHERE session_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT 21`,
    sessionId,
    BigInt(MESSAGES / 10),
  );
  console.log(`\ndeep-page plan:\n${plan.map((r) => `  ${r['QUERY PLAN']}`).join('\n')}`);
  await api.close();
  await queue.stop({ timeoutMs: 5_000 });
  await machines.close();
  await db.close();
} finally {
  server.stop();
}
