/**
 * The figures of issue #32 (agents at team scale), on PostgreSQL with real server processes, run
 * on demand:
 *
 *   node bench/scale.ts [--turns 200] [--latency-ms 1000] [--replicas 1,2] [--idle-runs 11] [--replica-cpus N] [--env K=V,...]
 *
 * It starts a private PostgreSQL, the scripted model server of the tests (the OpenAI wire; each
 * call answers after `--latency-ms`, or at once for the instant-model figures), a real sshd and
 * one `agentplane serve` replica, then a second one on the same database. Every turn is one
 * `run_command true` over SSH and a final answer: two model calls. The table prints each figure
 * beside its baseline from the same run:
 *
 * - a burst of `--turns` messages (one per session, all on one computer) with the slow model:
 *   how long the burst takes ÷ how long one such turn takes alone;
 * - the same burst with the instant model: turns per second;
 * - message → turn started (the commit that marks the session running), p50 / p99, on an idle server
 *   and under the burst;
 * - where a turn's CPU goes in each burst: the replicas, PostgreSQL, sshd with the commands
 *   it runs, and this process (the model server and the client), in ms per turn, beside the whole
 *   machine's busy time (/proc/stat), and how many of the turns each replica ran; and the burst's floor: that CPU time spread over every core,
 *   which no number of replicas on this machine can beat;
 * - where a start's time goes: message stamped → its transaction committed → the turn started (the
 *   same commit when the message began it) → job fetched → the turn's first model call;
 * - the control-plane's resident memory per running turn during the slow burst;
 * - two replicas ÷ one, the same bursts (the second replica works the same job queue), and the
 *   best ratio this machine allows (two replicas' floor ÷ one replica's burst);
 * - `--streams` (1,000) session event streams held open on the first replica, spread over the
 *   sessions, through an instant burst: every stream hears its session's turn end, and what each
 *   open stream costs the replica in memory.
 *
 * `--pg-waits` samples what PostgreSQL's backends wait on during the instant burst, `--pg-stats`
 * counts its statements per turn in each burst, `--profile DIR` writes each replica's V8 CPU profile.
 *
 * `--replica-cpus N` gives each replica a CPU budget of N cores of its own (a cgroup's CFS quota, as
 * a container's CPU limit; needs root): on a machine whose cores PostgreSQL, sshd, the model and the
 * replicas all share, a second replica can only share them too, and the budget shows whether the
 * control plane itself scales out: with replicas bounded by their own CPU, does a second one double
 * what they carry (no lock, queue or poll shared between them in the way)?
 *
 * `--env` passes settings to the replicas (e.g. `AGENTPLANE_TURN_CONCURRENCY=64`); the turn limits
 * per owner and organization are lifted (one owner sends every message). The CLI start
 * time and relay throughput figures are bench/gateway.ts's.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startModelServer, type ModelServer, type RecordedRequest, type ScriptedReply } from '../test/support/model-server.ts';
import { CODER_KEY_ENV, coderModel, writeModelsFile } from '../test/support/models-file.ts';
import { startPostgres } from '../test/support/postgres-server.ts';
import { startServerProcess, type ServerProcess } from '../test/support/server-process.ts';
import { startSshd } from '../test/support/sshd.ts';
import { waitFor } from '../test/support/wait.ts';
import { limitCpu } from './cpu-budget.ts';
import { machineBusyMs } from './machine-cpu.ts';

const { values: args } = parseArgs({
  options: {
    turns: { type: 'string', default: '200' },
    'latency-ms': { type: 'string', default: '1000' },
    replicas: { type: 'string', default: '1,2' },
    'idle-runs': { type: 'string', default: '11' },
    env: { type: 'string', default: '' },
    only: { type: 'string', default: 'slow,instant,streams' },
    streams: { type: 'string', default: '1000' },
    profile: { type: 'string' },
    'pg-stats': { type: 'boolean', default: false },
    'pg-waits': { type: 'boolean', default: false },
    'replica-cpus': { type: 'string' },
  },
});
const TURNS = Number(args.turns);
const LATENCY_MS = Number(args['latency-ms']);
const REPLICAS = args.replicas.split(',').map(Number);
const IDLE_RUNS = Number(args['idle-runs']);
const ONLY = new Set(args.only.split(','));
/** --replica-cpus N: each replica runs with a CPU budget of N cores of its own (a container's CPU limit). */
const REPLICA_CPUS = args['replica-cpus'] ? Number(args['replica-cpus']) : undefined;
const budget = REPLICA_CPUS ? `, each replica limited to ${REPLICA_CPUS} core(s)` : '';
// One owner sends every message here: the per-owner and per-organization limits (a team's
// fairness, not one process's capacity) are lifted unless --env sets them.
const EXTRA_ENV = {
  AGENTPLANE_TURNS_PER_OWNER: '10000',
  AGENTPLANE_TURNS_PER_ORGANIZATION: '10000',
  ...Object.fromEntries(
    args.env
      .split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  ),
};

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))] ?? Number.NaN;
};
const median = (xs: number[]) => quantile(xs, 0.5);
const fmtMs = (n: number) => (n >= 10_000 ? `${(n / 1000).toFixed(1)} s` : `${n.toFixed(0)} ms`);

// --- the scripted model: every turn runs `true` once, then answers; `delayMs` before each reply ---
let delayMs = 0;
/** Calls of the OpenAI wire: the role chunk, content, finish and usage chunks each wait `chunkDelayMs`. */
let chunksPerReply = 1;
const model: ModelServer = await startModelServer();
/** When each session's turn first called the model (epoch ms): its message names the session. */
const firstCalls = new Map<string, number>();
const reply = (request: RecordedRequest): ScriptedReply => {
  const last = request.body.messages.at(-1);
  const named = last?.role === 'user' ? /go ([^\s"\\]+)/.exec(JSON.stringify(last.content)) : null;
  if (named && !firstCalls.has(named[1]!)) firstCalls.set(named[1]!, Date.now());
  const base: ScriptedReply =
    last?.role === 'tool' ? { text: 'done', chunkSize: 64 } : { toolCalls: [{ name: 'run_command', arguments: { command: 'true' } }] };
  return delayMs > 0 ? { ...base, chunkDelayMs: delayMs / chunksPerReply } : base;
};
model.respondWith(reply);

// --pg-stats: PostgreSQL counts statements (pg_stat_statements); the instant burst prints them per turn.
// Commit timestamps: when a turn's start committed (see burst).
const postgres = await startPostgres({
  settings: ['track_commit_timestamp=on', ...(args['pg-stats'] ? ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'] : [])],
});
if (!postgres) throw new Error('PostgreSQL not found (/usr/lib/postgresql): bench/scale.ts needs it');
const sshd = await startSshd({ maxSessions: 10 });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-scale-'));
fs.chmodSync(tmp, 0o755);
const models = writeModelsFile([coderModel(model)], { [CODER_KEY_ENV]: model.apiKey });
const env = {
  ...models.env,
  ...EXTRA_ENV,
  DATABASE_URL: postgres.url,
  AGENTPLANE_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  AGENTPLANE_LOCAL_PROVIDER: 'false',
  AGENTPLANE_EGRESS_ALLOW: '127.0.0.0/8',
  // Each replica's Prometheus metrics on a port of its own: how many turns each one ran.
  AGENTPLANE_METRICS_PORT: '0',
  // --profile DIR: each replica writes a V8 CPU profile there when it stops.
  ...(args.profile ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${path.resolve(args.profile)}` } : {}),
};
const servers: ServerProcess[] = [];
const budgets: { release(): void }[] = [];
/** Starts the next replica, within its CPU budget when --replica-cpus gives one. */
const startReplica = async () => {
  const server = await startServerProcess({ ...env, AGENTPLANE_DATA_DIR: path.join(tmp, `server-${servers.length}`) });
  if (REPLICA_CPUS) budgets.push(limitCpu(server.child.pid!, REPLICA_CPUS, `agentplane-bench-${process.pid}-${servers.length}`));
  servers.push(server);
  return server;
};
/** Turns each replica has run to the end so far (its agentplane_jobs_total of sessions.turn). */
const turnsRun = () =>
  Promise.all(
    servers.map(async (s) => {
      const url = /"url":"([^"]+)","msg":"metrics are served"/.exec(s.output())?.[1];
      if (!url) return Number.NaN;
      const text = await (await fetch(url)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('agentplane_jobs_total{') && l.includes('kind="sessions.turn"') && l.includes('outcome="completed"'));
      return line ? Number(line.split(' ').pop()) : 0;
    }),
  );
const db = new pg.Client({ connectionString: postgres.url });
const rows: [string, string, string, string][] = [];
const row = (figure: string, value: string, baseline: string, goal: string) => {
  rows.push([figure, value, baseline, goal]);
  console.log(`  ${figure}: ${value} (baseline ${baseline}; goal ${goal})`);
};

try {
  const first = await startReplica();
  const key = first.firstStartKey!;
  await db.connect();
  const call = async (url: string, method: string, p: string, body?: unknown) => {
    const res = await fetch(`${url}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json().catch(() => undefined)) as any;
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  sshd.authorizeKey((await call(first.url, 'GET', '/api/v0/computers/ssh-public-key')).publicKey);
  const computer = await call(first.url, 'POST', '/api/v0/computers', {
    name: 'scale-box',
    provider: 'byom',
    remoteUser: sshd.username,
    connection: { host: sshd.host, port: sshd.port },
  });
  const newSessions = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, n - i) }, () =>
          call(first.url, 'POST', '/api/v0/sessions', { computerId: computer.id, cwd: '/tmp', sessionSettings: { model: 'coder', autonomyLevel: 'high' } }),
        ),
      );
      ids.push(...batch.map((s) => s.sessionId as string));
    }
    return ids;
  };

  // Calibrate the slow model: one call's chunks, so that a whole call takes LATENCY_MS.
  delayMs = 100;
  chunksPerReply = 1;
  {
    const t0 = performance.now();
    await fetch(`${model.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${model.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'upstream-coder', stream: true, messages: [{ role: 'user', content: 'go' }] }),
    }).then((r) => r.text());
    chunksPerReply = Math.max(1, Math.round((performance.now() - t0) / 100));
  }

  /** Posts one message to each session at once; resolves when every session is idle again. */
  const burst = async (ids: string[], urls: string[]) => {
    const since = new Date();
    // CPU from before the first message is posted: storing the messages is part of a turn's cost.
    const parts0 = cpuByPart();
    const busy0 = machineBusyMs();
    const run0 = await turnsRun();
    const t0 = performance.now();
    firstCalls.clear();
    await Promise.all(ids.map((id, i) => call(urls[i % urls.length]!, 'POST', `/api/v0/sessions/${id}/messages`, { text: `go ${id}` })));
    const posted = performance.now() - t0;
    let peakRss = 0;
    let peakRunning = 0;
    await waitFor(
      'the burst to end',
      async () => {
        peakRss = Math.max(
          peakRss,
          servers.reduce((sum, s) => sum + rssOf(s.child.pid!), 0),
        );
        const { rows: counts } = await db.query<{ status: string; n: string }>(`SELECT status, count(*) n FROM sessions WHERE id = ANY($1) GROUP BY status`, [
          ids,
        ]);
        const by = Object.fromEntries(counts.map((c) => [c.status, Number(c.n)]));
        peakRunning = Math.max(peakRunning, by.running ?? 0);
        return (by.idle ?? 0) === ids.length;
      },
      30 * 60_000,
      50,
    );
    const elapsed = performance.now() - t0;
    const parts1 = cpuByPart();
    const run1 = await turnsRun();
    const byReplica = run1.slice(0, urls.length).map((n, i) => n - (run0[i] ?? 0));
    const parts = Object.fromEntries(Object.entries(parts1).map(([k, v]) => [k, v - (parts0[k as keyof typeof parts0] ?? 0)])) as typeof parts1;
    const cpuMs = parts.replicas;
    const machineMs = machineBusyMs() - busy0;
    // A turn has started when the transaction that marked its session running committed (the xmin
    // of its `session.status` running event, which is never updated), not when that transaction
    // began: a start that waits inside its transaction (a lock, the pool's other work) has not
    // started yet. A message to an idle session begins its turn in its own transaction; one over a
    // limit begins it later, in its job's. On the way, per turn: the message's own transaction
    // committed (its `session.message.created` event), the turn job fetched by a worker, and the
    // turn's first model call (the agent at work: its environment loaded, AGENTS.md read).
    const { rows: steps } = await db.query<{
      session_id: string;
      created_ms: number;
      stored: number;
      fetched: number;
      committed: number;
      with_message: boolean;
    }>(
      `SELECT m.session_id, extract(epoch FROM m.created_at) * 1000 AS created_ms,
              extract(epoch FROM (pg_xact_commit_timestamp(c.xmin) - m.created_at)) * 1000 AS stored,
              extract(epoch FROM (j.started_on - m.created_at)) * 1000 AS fetched,
              extract(epoch FROM (pg_xact_commit_timestamp(e.xmin) - m.created_at)) * 1000 AS committed,
              c.xmin = e.xmin AS with_message
       FROM session_messages m
       JOIN LATERAL (SELECT c.xmin FROM events c WHERE c.session_id = m.session_id AND c.type = 'session.message.created' AND c.data->'message'->>'id' = m.id) c ON true
       JOIN LATERAL (SELECT j.started_on FROM pgboss.job_common j WHERE j.name = 'sessions.turn' AND j.data->>'sessionId' = m.session_id AND j.created_on >= $2 ORDER BY j.created_on LIMIT 1) j ON true
       JOIN LATERAL (
         SELECT e.xmin FROM events e
         WHERE e.session_id = m.session_id AND e.type = 'session.status' AND e.data->>'status' = 'running' AND e.created_at >= m.created_at
         ORDER BY e.id LIMIT 1
       ) e ON true
       WHERE m.session_id = ANY($1) AND m.role = 'user' AND m.created_at >= $2`,
      [ids, since],
    );
    if (steps.length !== ids.length) throw new Error(`${ids.length - steps.length} turn(s) of the burst never started`);
    const modelCalled = steps.map((r) => (firstCalls.get(r.session_id) ?? Number.NaN) - Number(r.created_ms));
    if (modelCalled.some(Number.isNaN)) throw new Error('a turn of the burst never called the model');
    const startSteps = {
      stored: median(steps.map((r) => Number(r.stored))),
      committed: median(steps.map((r) => Number(r.committed))),
      fetched: median(steps.map((r) => Number(r.fetched))),
      modelCalled: median(modelCalled),
      withMessage: steps.filter((r) => r.with_message).length,
    };
    const failed = await db.query(
      `SELECT count(*) n FROM session_messages WHERE session_id = ANY($1) AND role = 'assistant' AND created_at >= $2 AND content::text LIKE '%The turn failed%'`,
      [ids, since],
    );
    return {
      elapsed,
      posted,
      cpuMs,
      parts,
      machineMs,
      startSteps,
      startMs: steps.map((r) => Number(r.committed)),
      peakRss,
      peakRunning,
      byReplica,
      failed: Number(failed.rows[0].n),
    };
  };
  /** One turn on an idle server, `runs` times: the whole turn and message → started. */
  const alone = async (id: string, urls: string[], runs: number) => {
    const whole: number[] = [];
    const start: number[] = [];
    const modelCalled: number[] = [];
    let cpuMs = 0;
    for (let i = 0; i < runs; i++) {
      const r = await burst([id], [urls[i % urls.length]!]);
      whole.push(r.elapsed);
      start.push(...r.startMs);
      modelCalled.push(r.startSteps.modelCalled);
      cpuMs += r.cpuMs;
    }
    return { whole: median(whole), start, modelCalled: median(modelCalled), cpuMs };
  };

  const single = (await newSessions(1))[0]!;
  const pool = await newSessions(TURNS);
  const results = new Map<number, { slow: number; instant: number; instantFloor?: number }>();
  for (const replicas of REPLICAS) {
    while (servers.length < replicas) await startReplica();
    const urls = servers.slice(0, replicas).map((s) => s.url);
    console.log(`\n${replicas} replica(s)${budget}, ${TURNS} sessions on one computer, one message each, model ${LATENCY_MS} ms per call`);

    if (ONLY.has('slow')) {
      delayMs = LATENCY_MS;
      const slowAlone = await alone(single, urls, 3);
      const idleRss = servers.reduce((sum, s) => sum + rssOf(s.child.pid!), 0);
      if (args['pg-stats']) await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()');
      const slow = await burst(pool, urls);
      if (args['pg-stats']) await printStatements(TURNS, 'slow');
      row(
        `${replicas}r: ${TURNS} turns, model ${LATENCY_MS} ms/call: burst ÷ single turn`,
        `${(slow.elapsed / slowAlone.whole).toFixed(2)}x (${fmtMs(slow.elapsed)}, ${slow.failed} failed)`,
        `single turn ${fmtMs(slowAlone.whole)}`,
        '< 5x',
      );
      row(
        `${replicas}r: message → turn started under the slow burst, p50 / p99`,
        `${fmtMs(median(slow.startMs))} / ${fmtMs(quantile(slow.startMs, 0.99))}`,
        `idle ${fmtMs(median(slowAlone.start))}`,
        '< 100 ms / < 1 s',
      );
      row(
        `${replicas}r: control-plane memory per running turn (peak ${slow.peakRunning} running)`,
        `${((slow.peakRss - idleRss) / Math.max(1, slow.peakRunning)).toFixed(0)} KiB (RSS +${((slow.peakRss - idleRss) / 1024).toFixed(1)} MiB over idle at the peak)`,
        `idle RSS ${(idleRss / 1024).toFixed(0)} MiB`,
        'reported',
      );
      row(
        `${replicas}r: where a turn's CPU goes, slow burst (ms per turn)`,
        cpuSplit(slow),
        `the machine busy ${((slow.machineMs / slow.elapsed) * 100).toFixed(0)}% of one core during the burst (${os.cpus().length} cores); the messages posted in ${fmtMs(slow.posted)}`,
        'reported',
      );
      results.set(replicas, { ...(results.get(replicas) ?? { instant: Number.NaN }), slow: slow.elapsed });
    }

    if (!ONLY.has('instant')) continue;
    delayMs = 0;
    const fastAlone = await alone(single, urls, IDLE_RUNS);
    if (args['pg-stats']) await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()');
    const waits = args['pg-waits'] ? sampleWaits() : undefined;
    const fast = await burst(pool, urls);
    if (waits) await waits.print();
    if (args['pg-stats']) await printStatements(TURNS, 'instant');
    const tps = (TURNS / fast.elapsed) * 1000;
    // The same work at 100% of every core: no number of replicas on this machine finishes faster.
    const floorMs = fast.machineMs / os.cpus().length;
    results.set(replicas, { ...(results.get(replicas) ?? { slow: Number.NaN }), instant: fast.elapsed, instantFloor: floorMs });
    row(
      `${replicas}r: ${TURNS} turns, instant model: turns per second (${replicas} replica(s))`,
      `${tps.toFixed(1)}/s (${fmtMs(fast.elapsed)}, ${fast.failed} failed)`,
      `single turn ${fmtMs(fastAlone.whole)}`,
      `≥ ${20 * replicas}`,
    );
    row(
      `${replicas}r: CPU of the replica process(es) per turn, instant burst`,
      `${(fast.cpuMs / TURNS).toFixed(1)} ms (${(2000 / (fast.cpuMs / TURNS)).toFixed(0)} turns/s on 2 idle cores)`,
      `single turn ${(fastAlone.cpuMs / IDLE_RUNS).toFixed(1)} ms`,
      '≤ 100 ms',
    );
    row(
      `${replicas}r: where a turn's CPU goes, instant burst (ms per turn)`,
      cpuSplit(fast),
      `the machine busy ${((fast.machineMs / fast.elapsed) * 100).toFixed(0)}% of one core during the burst (${os.cpus().length} cores); the messages posted in ${fmtMs(fast.posted)}`,
      'reported',
    );
    row(
      `${replicas}r: the instant burst's floor on this machine (its CPU time ÷ ${os.cpus().length} cores)`,
      `${fmtMs(floorMs)}: the burst took ${fmtMs(fast.elapsed)}, ${((floorMs / fast.elapsed) * 100).toFixed(0)}% of the machine`,
      `${fmtMs(fast.machineMs / TURNS)} of CPU per turn`,
      'reported',
    );
    row(
      `${replicas}r: message → turn started, p50 / p99`,
      `burst ${fmtMs(median(fast.startMs))} / ${fmtMs(quantile(fast.startMs, 0.99))}`,
      `idle ${fmtMs(median(fastAlone.start))} / ${fmtMs(quantile(fastAlone.start, 0.99))}`,
      '< 100 ms / < 1 s',
    );
    row(
      `${replicas}r: where the start's time goes, instant burst (p50 from the message stored)`,
      `message committed ${fmtMs(fast.startSteps.stored)}, turn started ${fmtMs(fast.startSteps.committed)} (${fast.startSteps.withMessage}/${TURNS} begun by their message), job fetched ${fmtMs(fast.startSteps.fetched)}, first model call ${fmtMs(fast.startSteps.modelCalled)}`,
      `idle: first model call ${fmtMs(fastAlone.modelCalled)}; messages posted in ${fmtMs(fast.posted)}`,
      'reported',
    );
  }
  if (ONLY.has('streams')) {
    delayMs = 0;
    const n = Number(args.streams);
    const url = servers[0]!.url;
    console.log(`\n${n} session event streams open on one replica during a ${TURNS}-turn instant burst`);
    const before = rssOf(servers[0]!.child.pid!);
    const streams = await openStreams(url, key, pool, n);
    const open = rssOf(servers[0]!.child.pid!);
    for (const s of streams) s.armed = true;
    const t0 = performance.now();
    await burst(pool, [url]);
    await waitFor('every stream to hear its session go idle', () => streams.every((s) => s.heardIdle), 120_000, 100);
    const heardMs = performance.now() - t0;
    const dropped = streams.filter((s) => s.ended).length;
    for (const s of streams) s.close();
    row(
      `${n} open session streams on one replica: every stream hears its turn end`,
      `${streams.filter((s) => s.heardIdle).length}/${n} heard, ${dropped} dropped; last heard ${fmtMs(heardMs)} after the burst began`,
      `${TURNS} turns`,
      'hold',
    );
    row(`memory per open session stream`, `${((open - before) / n).toFixed(0)} KiB`, `RSS before ${(before / 1024).toFixed(0)} MiB`, 'reported');
  }
  const one = results.get(1);
  const two = results.get(2);
  if (one && two) {
    row(`two replicas ÷ one, slow burst${budget}`, `${(two.slow / one.slow).toFixed(2)}x`, `one ${fmtMs(one.slow)}`, '≤ 0.55x');
    row(`two replicas ÷ one, instant burst${budget}`, `${(two.instant / one.instant).toFixed(2)}x`, `one ${fmtMs(one.instant)}`, '≤ 0.55x');
    // Under a budget the replicas are bounded by it, not by the machine: no floor to compare with.
    if (two.instantFloor && !REPLICA_CPUS)
      row(
        'two replicas ÷ one, instant burst, the best this machine allows',
        `${(two.instantFloor / one.instant).toFixed(2)}x`,
        `two replicas' floor ${fmtMs(two.instantFloor)}`,
        'reported',
      );
  }
  console.log(`\n| figure | value | baseline (same run) | goal |\n|---|---|---|---|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  console.log(`\n(${os.cpus().length} cores${budget}; replica settings: ${JSON.stringify(EXTRA_ENV)})`);
} catch (err) {
  // What the replicas logged as errors, so a failure says why.
  for (const s of servers)
    console.error(
      s
        .output()
        .split('\n')
        .filter((l) => /"level":(50|60)/.test(l))
        .slice(-5)
        .join('\n'),
    );
  throw err;
} finally {
  await Promise.all(servers.map((s) => s.stop('SIGTERM')));
  for (const b of budgets) b.release();
  await db.end().catch(() => {});
  await model.close();
  await sshd.stop();
  await postgres.stop();
  models.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
}

/** What PostgreSQL ran during the burst, per turn: statements, their time, the costliest. */
/** --pg-waits: what PostgreSQL's backends are doing during the instant burst, sampled every 10 ms. */
function sampleWaits() {
  const counts = new Map<string, number>();
  let samples = 0;
  let stop = false;
  const probe = new pg.Client({ connectionString: postgres!.url });
  const loop = (async () => {
    await probe.connect();
    while (!stop) {
      const { rows } = await probe.query<{ what: string; query: string }>(
        `SELECT state || ' ' || coalesce(wait_event_type || ':' || wait_event, 'cpu') AS what, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS query
         FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND state <> 'idle'`,
      );
      samples++;
      for (const r of rows) {
        const k = r.what.startsWith('active') ? `${r.what} | ${r.query}` : r.what;
        counts.set(k, (counts.get(k) ?? 0) + 1);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    await probe.end();
  })();
  return {
    async print() {
      stop = true;
      await loop;
      console.log(`  PostgreSQL backends during the instant burst (mean per sample of ${samples}):`);
      for (const [k, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`    ${(n / samples).toFixed(2).padStart(6)}  ${k}`);
    },
  };
}

/** A burst's CPU per turn: each part's, all of them, and the whole machine's. */
function cpuSplit(b: { parts: ReturnType<typeof cpuByPart>; machineMs: number; byReplica: number[] }): string {
  const perTurn = (ms: number) => `${(ms / TURNS).toFixed(1)}`;
  const total = Object.values(b.parts).reduce((x, y) => x + y, 0);
  return `replica(s) ${perTurn(b.parts.replicas)}, PostgreSQL ${perTurn(b.parts.postgres)}, sshd and its commands ${perTurn(b.parts.sshd)}, bench ${perTurn(b.parts.bench)}; ${perTurn(total)} in all; the machine ${perTurn(b.machineMs)}${b.byReplica.length > 1 ? `; turns each replica ran ${b.byReplica.join(' / ')}` : ''}`;
}

async function printStatements(turns: number, which: string) {
  const { rows } = await db.query<{ query: string; calls: string; ms: number }>(
    `SELECT query, calls, total_exec_time AS ms FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC`,
  );
  const calls = rows.reduce((n, r) => n + Number(r.calls), 0);
  const ms = rows.reduce((n, r) => n + r.ms, 0);
  console.log(`  PostgreSQL during the ${which} burst: ${(calls / turns).toFixed(1)} statements and ${(ms / turns).toFixed(2)} ms execution per turn`);
  for (const r of rows.slice(0, 40))
    console.log(
      `    ${(Number(r.calls) / turns).toFixed(2).padStart(6)}/turn ${(r.ms / turns).toFixed(3).padStart(7)} ms  ${r.query.replace(/\s+/g, ' ').slice(0, 150)}`,
    );
}

/**
 * `n` event streams (`GET /sessions/{id}/events`), spread round-robin over `sessions`, each on its
 * own connection; resolves when every one has answered 200. Each notes when it hears its session
 * become idle once armed.
 */
async function openStreams(url: string, key: string, sessions: string[], n: number) {
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const opened = Array.from({ length: n }, (_, i) => {
    const state = { heardIdle: false, ended: false, armed: false, close: () => {} };
    return new Promise<typeof state>((resolve, reject) => {
      const req = http.get(`${url}/api/v0/sessions/${sessions[i % sessions.length]}/events`, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream ${i}: ${res.statusCode}`));
        res.setEncoding('utf8');
        let seen = '';
        res.on('data', (chunk: string) => {
          // What a stream replays or hears before the burst does not count.
          seen = state.armed ? (seen + chunk).slice(-4096) : '';
          if (/"status":"idle"/.test(seen)) state.heardIdle = true;
        });
        res.on('close', () => (state.ended = true));
        state.close = () => req.destroy();
        resolve(state);
      });
      req.on('error', reject);
    });
  });
  return Promise.all(opened);
}

/**
 * CPU used so far (ms, with the children each has reaped) by the parts of this machine a turn
 * runs on: the replicas and their children, PostgreSQL's processes, sshd with the commands it
 * runs, and this process (the model server and the client).
 */
function cpuByPart(): { replicas: number; postgres: number; sshd: number; bench: number } {
  const procs = new Map<number, { ppid: number; comm: string; ms: number; own: number }>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const own = (Number(f[11]) + Number(f[12])) * 10;
      procs.set(Number(d), {
        ppid: Number(f[1]),
        comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
        own,
        ms: own + (Number(f[13]) + Number(f[14])) * 10,
      });
    } catch {
      // gone meanwhile: its time is in its parent's reaped children
    }
  }
  const under = (root: number, pid: number): boolean => {
    for (let p: number | undefined = pid; p && p > 1; p = procs.get(p)?.ppid) if (p === root) return true;
    return false;
  };
  const parts = { replicas: 0, postgres: 0, sshd: 0, bench: procs.get(process.pid)?.own ?? 0 };
  for (const [pid, p] of procs) {
    if (servers.some((s) => under(s.child.pid!, pid))) parts.replicas += p.ms;
    else if (under(sshd.pid, pid)) parts.sshd += p.ms;
    else if (p.comm === 'postgres') parts.postgres += p.ms;
  }
  return parts;
}

/** Resident memory of a process in KiB. */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}
