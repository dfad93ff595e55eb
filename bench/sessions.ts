/**
 * Two figures of issue #6 and two of issue #23 (bench/sessions-context.ts), on PostgreSQL, run on demand:
 *
 *   node bench/sessions.ts [--messages 100000] [--runs 21] [--calls 50] [--command true] [--only lists,overhead,context]
 *
 * 1. Message-list latency through HTTP on a session with 100,000 messages: the first page, a deep
 *    page (about 90% of the way back) and a role-filtered deep page, against two floors (an
 *    unauthenticated bare route and the one-row session detail). Goal: p50 under 10 ms.
 * 2. Control-plane overhead per tool call: a turn of `--calls` `run_command true` calls against the
 *    scripted model server and a real sshd, stored as the worker stores it, against the same model
 *    calls and commands made back to back with nothing stored (the baseline). Goal: under 15 ms.
 *    Also measured in the same runs: the stored turn with run_command's output not streamed as
 *    `session.tool_output`, so the line after it is what streaming adds. `--command` runs another
 *    command than `true`, e.g. `seq 1 3000` (about 14 KB of output per call).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { issueApiKey } from '../src/auth/issue-api-key.ts';
import { compose, type ControlPlane } from '../src/compose.ts';
import { loadConfig } from '../src/config.ts';
import { encodeOpaqueCursor } from '../src/http/pagination.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { createLogger } from '../src/lib/logger.ts';
import { openBenchPostgres } from './postgres-database.ts';
import { contextFigures } from './sessions-context.ts';
import { listenOnFreePort } from '../test/support/http.ts';
import { startModelServer } from '../test/support/model-server.ts';
import { startSshd } from '../test/support/sshd.ts';
import type { PrismaClient } from '../src/db/client.ts';
import type { MachineAccess } from '../src/modules/computers/machine-access.ts';
import { runPersistedTurn, type TurnEnvironment } from '../src/modules/sessions/persisted-turn.ts';
import { createModelClient, defaultTools, toolSpecs, type RuntimeMessage } from '../src/agent/index.ts';
import { sshToolHost } from '../src/agent/ssh-tool-host.ts';
import { watchTurn } from '../src/modules/sessions/turn-watch.ts';
import type { SshTarget } from '../src/ssh/index.ts';

const { values: args } = parseArgs({
  options: {
    messages: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '21' },
    calls: { type: 'string', default: '40' },
    only: { type: 'string', default: 'lists,overhead,context' },
    command: { type: 'string', default: 'true' },
  },
});
const ONLY = new Set(args.only.split(','));
const MESSAGES = Number(args.messages);
const RUNS = Number(args.runs);
const CALLS = Number(args.calls);
const COMMAND = args.command;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p90 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)]!;
const ms = (n: number) => `${n.toFixed(2)} ms`;

const log = createLogger({ level: 'warn' });
const { db, stop } = await openBenchPostgres('bench_sessions', log);
try {
  const prisma = db.prisma;
  const org = await prisma.organization.create({ data: { id: newId('org'), name: 'bench' } });
  const user = await prisma.user.create({ data: { id: newId('usr'), email: 'user@bench.test' } });
  await prisma.membership.create({ data: { id: newId('mem'), organizationId: org.id, userId: user.id, role: 'user' } });
  const dataDir = mkdtempSync(join(tmpdir(), 'agentplane-bench-'));
  const plane = await compose({ config: loadConfig({ AGENTPLANE_DATA_DIR: dataDir }), db, log, overrides: { work: false, schedules: false } });
  await plane.start();
  const { machines } = plane;
  if (ONLY.has('lists')) await messageLists(prisma, { organizationId: org.id, userId: user.id }, plane.app);
  if (ONLY.has('overhead')) await toolCallOverhead(prisma, { organizationId: org.id, userId: user.id, machines });
  if (ONLY.has('context')) await contextFigures(prisma, { organizationId: org.id, userId: user.id, machines });
  await plane.stop(5_000);
} finally {
  await stop();
}

/** Message-list latency over HTTP on a session of MESSAGES messages (figure 1 of issue #6). */
async function messageLists(prisma: PrismaClient, ids: { organizationId: string; userId: string }, app: ControlPlane['app']) {
  const org = { id: ids.organizationId };
  const user = { id: ids.userId };
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
  for (const [id, n] of [
    [sessionId, MESSAGES],
    [other, MESSAGES],
  ] as const) {
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
}

/**
 * Median over 5 runs of (stored turn - bare calls) / CALLS. Both sides make the same CALLS + 1
 * model calls to the same scripted server and run the same CALLS commands on the same pooled
 * connection, so the difference is what the control plane adds: tool dispatch and validation,
 * storing each message and its usage, analytics events, the interrupt watch.
 */
async function toolCallOverhead(prisma: PrismaClient, ids: { organizationId: string; userId: string; machines: MachineAccess }) {
  const [sshd, model] = await Promise.all([startSshd(), startModelServer()]);
  try {
    const target: SshTarget = {
      host: sshd.host,
      port: sshd.port,
      username: sshd.username,
      privateKey: sshd.privateKey,
      hostKeyFingerprint: sshd.hostKeyFingerprint,
    };
    const client = createModelClient({ id: 'bench', provider: 'openai-compatible', baseUrl: model.baseUrl, apiKey: model.apiKey });
    const script = () => {
      for (let i = 0; i < CALLS; i++) model.enqueue({ toolCalls: [{ name: 'run_command', arguments: { command: COMMAND } }] });
      model.enqueue({ text: 'done' });
    };
    const env: TurnEnvironment = { db: prisma, clock: systemClock, host: sshToolHost(ids.machines.ssh, target, '/tmp'), model: client, system: 'bench' };
    const bare = async () => {
      script();
      const messages: RuntimeMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'go' }] }];
      const t0 = performance.now();
      for (let i = 0; i <= CALLS; i++) {
        const completion = await client.complete({ system: 'bench', messages, tools: toolSpecs(defaultTools) });
        messages.push({ role: 'assistant', content: completion.content });
        const call = completion.content.find((b) => b.type === 'tool_use');
        if (!call) break;
        const res = await ids.machines.ssh.exec(target, COMMAND, { cwd: '/tmp', maxOutputBytes: 14_000, timeoutMs: 120_000 });
        messages.push({ role: 'tool', content: [{ type: 'tool_result', toolUseId: call.id, content: `[exit code ${res.exitCode}]`, isError: false }] });
      }
      return performance.now() - t0;
    };
    // The same tools with run_command's live output switched off (it never gets the onOutput
    // callback): the stored turn without `session.tool_output`, measured in the same runs.
    const unstreamed = defaultTools.map((t) => (t.name === 'run_command' ? { ...t, run: (...a: Parameters<typeof t.run>) => t.run(a[0], a[1], a[2]) } : t));
    // CPU of this process (the turn, and the scripted model server alike in both variants): less
    // disturbed than wall time by other work on a shared machine.
    const cpu = new Map<readonly unknown[], number[]>([
      [defaultTools, []],
      [unstreamed, []],
    ]);
    const stored = async (tools = defaultTools) => {
      script();
      const now = new Date();
      const session = await prisma.session.create({
        data: {
          id: newId('sess'),
          organizationId: ids.organizationId,
          ownerKind: 'human',
          ownerId: ids.userId,
          computerId: 'cmp_bench',
          cwd: '/tmp',
          status: 'running',
          createdAt: now,
          updatedAt: now,
        },
      });
      const watch = watchTurn(prisma, systemClock, session.id, new AbortController().signal);
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const result = await runPersistedTurn(
        env,
        session,
        { autonomyLevel: 'high' },
        {
          history: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }],
          tools,
          signal: watch.signal,
        },
      );
      const elapsed = performance.now() - t0;
      const c1 = process.cpuUsage(c0);
      cpu.get(tools)!.push((c1.user + c1.system) / 1000);
      watch.stop();
      if (result.stopReason !== 'end_turn' || result.steps !== CALLS + 1) throw new Error(`turn ended ${result.stopReason} after ${result.steps} calls`);
      return elapsed;
    };
    await bare();
    await stored();
    await stored(unstreamed);
    for (const runs of cpu.values()) runs.length = 0;
    const bareRuns: number[] = [];
    const storedRuns: number[] = [];
    const unstreamedRuns: number[] = [];
    for (let i = 0; i < 5; i++) {
      bareRuns.push(await bare());
      // Alternating which variant goes first, so neither always follows the baseline.
      if (i % 2 === 0) storedRuns.push(await stored());
      unstreamedRuns.push(await stored(unstreamed));
      if (i % 2 === 1) storedRuns.push(await stored());
    }
    const b = median(bareRuns);
    const st = median(storedRuns);
    const un = median(unstreamedRuns);
    console.log(`\nper tool call, ${CALLS} run_command calls of \`${COMMAND}\` per turn, median of 5 (goal overhead < 15 ms)`);
    console.log(`  baseline: model call + command, nothing stored   ${ms(b / CALLS).padStart(10)} per call`);
    console.log(`  stored turn (runPersistedTurn + interrupt watch) ${ms(st / CALLS).padStart(10)} per call`);
    console.log(`  control-plane overhead                           ${ms((st - b) / CALLS).padStart(10)} per call`);
    console.log(`  same, command output not streamed                ${ms((un - b) / CALLS).padStart(10)} per call`);
    console.log(`  what streaming the output adds                   ${ms((st - un) / CALLS).padStart(10)} per call`);
    const cpuStreamed = median(cpu.get(defaultTools)!) / CALLS;
    const cpuUnstreamed = median(cpu.get(unstreamed)!) / CALLS;
    console.log(
      `  CPU of this process, stored turn: streamed ${ms(cpuStreamed)}, not streamed ${ms(cpuUnstreamed)} per call (adds ${ms(cpuStreamed - cpuUnstreamed)})`,
    );
  } finally {
    await model.close();
    await sshd.stop();
  }
}
