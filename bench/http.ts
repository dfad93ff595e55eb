/**
 * HTTP benchmark: authenticated `GET /api/v0/service-accounts` against a bare Express "hello"
 * route served by the same process, on PGlite and on PostgreSQL. Run on demand:
 *
 *   node bench/http.ts                 # 5 runs of 10 s per target and backend
 *   BENCH_RUNS=3 BENCH_SECONDS=5 BENCH_BACKENDS=pglite node bench/http.ts
 *   BENCH_TARGETS=endpoint node --cpu-prof bench/http.ts   # profile one route's work
 *
 * The load generator (autocannon, 50 connections) runs in a child process so it does not share
 * the server's event loop. Goal: the endpoint keeps >= 50% of the bare route's requests/s with a
 * p99 latency under 25 ms. Two more targets split the endpoint's cost: `GET /healthz` (the app's
 * middleware and response validation, no credential, no database) and
 * `GET /api/v0/computers/providers` (authentication, no database work of its own).
 *
 * BENCH_OBSERVED=compare: the service-accounts list with metrics and tracing on (a metrics port
 * scraped every second, spans exported over OTLP/HTTP to a sink in this process) against the same
 * run with both off, each run a fresh process (both are per process), alternating; goal: on >= 0.9x off.
 *
 *   BENCH_OBSERVED=compare BENCH_RUNS=5 node bench/http.ts
 *
 * Beside requests/s it prints the CPU each request costs the server process (PGlite runs inside
 * it) and the PostgreSQL server: on a small machine the load generator, the server and the
 * database share the cores, so CPU per request is the steadier figure.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import pg from 'pg';
import { pino } from 'pino';
import { compose } from '../src/compose.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase, type Database } from '../src/db/client.ts';
import { migrateDatabase } from '../src/db/migrations.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { createLogger } from '../src/lib/logger.ts';
import { bootstrapOrganization } from '../src/modules/organization/bootstrap.ts';
import { createProviderRegistry } from '../src/provisioning/providers/registry.ts';
import { startPostgres } from '../test/support/postgres-server.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const AUTOCANNON = path.join(ROOT, 'node_modules', '.bin', 'autocannon');
const CONNECTIONS = 50;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'pglite,postgres').split(',');
/** Accounts in the benchmark organization, so the list has real rows to read and serialize. */
const ACCOUNTS = 10;

const ALL_TARGETS = ['bare', 'floor', 'authOnly', 'endpoint'] as const;
type Target = (typeof ALL_TARGETS)[number];
/** A subset (BENCH_TARGETS=endpoint) keeps a CPU profile (`node --cpu-prof`) to one route's work. */
const TARGETS = (process.env.BENCH_TARGETS?.split(',') ?? ALL_TARGETS) as Target[];
for (const name of TARGETS) {
  if (!ALL_TARGETS.includes(name)) throw new Error(`BENCH_TARGETS: unknown target ${name}; choose from ${ALL_TARGETS.join(', ')}`);
}
const LABELS: Record<Target, string> = {
  bare: 'bare Express GET /hello',
  floor: "GET /healthz (the app's middleware, no credential, no database)",
  authOnly: 'GET /api/v0/computers/providers (authentication only)',
  endpoint: 'GET /api/v0/service-accounts',
};

const SHORT: Record<Target, string> = { bare: 'bare', floor: 'app, no auth', authOnly: 'auth only', endpoint: 'service-accounts' };

interface Figures {
  rps: number;
  p99: number;
  /** CPU per request in microseconds: this process (server, PGlite) and the PostgreSQL server. */
  serverUs: number;
  databaseUs: number;
}

interface Run {
  rps: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** CPU time (ms) of a process and of its children now, read from /proc (Linux). */
function processCpuMs(pid: number, withChildren: boolean): number {
  const fields = (stat: string) => stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  let ticks = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let f: string[];
    try {
      f = fields(fs.readFileSync(`/proc/${entry}/stat`, 'utf8'));
    } catch {
      continue; // exited meanwhile
    }
    if (Number(entry) === pid || (withChildren && Number(f[1]) === pid)) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks * TICK_MS;
}

const ownCpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** One autocannon run in a child process; its `--json` summary on stdout. */
function cannon(url: string, headers: Record<string, string>, seconds: number): Promise<Run> {
  const args = ['-c', String(CONNECTIONS), '-d', String(seconds), '-j'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn(AUTOCANNON, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}`));
      const r = JSON.parse(out) as {
        requests: { average: number; total: number };
        latency: { p99: number };
        non2xx: number;
        errors: number;
      };
      resolve({ rps: r.requests.average, p99: r.latency.p99, requests: r.requests.total, non2xx: r.non2xx, errors: r.errors });
    });
  });
}

function listen(app: Express): Promise<{ url: string; close(): Promise<void> }> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

interface Backend {
  db: Database;
  dataDir: string;
  /** CPU time (ms) the database server has used so far; 0 for PGlite, which runs in this process. */
  databaseCpuMs(): number;
  dispose(): Promise<void>;
}

/** A migrated database and a data directory (the machine-access key lives there), removed by `dispose`. */
async function openBackend(kind: string): Promise<Backend> {
  const log = createLogger({ level: 'silent' });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-bench-'));
  const removeDir = () => fs.rmSync(dataDir, { recursive: true, force: true });
  if (kind === 'pglite') {
    const db = await openDatabase({ dataDir });
    await migrateDatabase(db, log);
    return {
      db,
      dataDir,
      databaseCpuMs: () => 0,
      dispose: async () => {
        await db.close();
        removeDir();
      },
    };
  }
  const server = await startPostgres();
  if (!server) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('CREATE DATABASE bench');
  const { rows } = await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  // Every PostgreSQL process (backends, writers) is a child of the postmaster.
  const postmaster = Number(fs.readFileSync(`/proc/${rows[0]!.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
  await admin.end();
  const url = new URL(server.url);
  url.pathname = '/bench';
  const db = await openDatabase({ databaseUrl: url.toString(), dataDir });
  await migrateDatabase(db, log);
  return {
    db,
    dataDir,
    databaseCpuMs: () => processCpuMs(postmaster, true),
    dispose: async () => {
      await db.close();
      server.stop();
      removeDir();
    },
  };
}

async function benchBackend(kind: string) {
  const { db, dataDir, databaseCpuMs, dispose } = await openBackend(kind);
  try {
    const boot = await bootstrapOrganization(db.prisma, { org: 'bench', email: 'owner@bench.test' }, systemClock);
    await db.prisma.serviceAccount.createMany({
      data: Array.from({ length: ACCOUNTS }, (_, i) => ({
        id: newId('sa'),
        organizationId: boot.organizationId,
        name: `bench-${i}`,
        description: 'benchmark account',
        createdBy: boot.userId,
      })),
    });
    // The server's default level, as `npm start` runs it; the lines go nowhere, as they would to a collector's pipe.
    const log = createLogger({ level: process.env.BENCH_LOG_LEVEL ?? 'info', destination: pino.destination({ dest: '/dev/null', sync: true }) });
    const mode = process.env.BENCH_OBSERVED;
    const observed = mode === 'on' || mode === 'metrics' || mode === 'traces' ? await observedEnv(mode) : undefined;
    const plane = await compose({
      config: loadConfig({ AGENTPLANE_DATA_DIR: dataDir, ...observed?.env }),
      db,
      log,
      overrides: { providers: createProviderRegistry([]), queue: { send: () => Promise.reject(new Error('the benchmarked routes send no jobs')) } },
    });
    await plane.start();
    const { app } = plane;
    const bare = express();
    bare.get('/hello', (_req, res) => {
      res.json({ hello: 'world' });
    });
    const [appServer, bareServer] = [await listen(app), await listen(bare)];
    const auth = { authorization: `Bearer ${boot.apiKey}` };
    const targets: Record<Target, { url: string; headers: Record<string, string> }> = {
      bare: { url: `${bareServer.url}/hello`, headers: {} },
      floor: { url: `${appServer.url}/healthz`, headers: {} },
      authOnly: { url: `${appServer.url}/api/v0/computers/providers`, headers: auth },
      endpoint: { url: `${appServer.url}/api/v0/service-accounts`, headers: auth },
    };
    try {
      const check = await fetch(targets.endpoint.url, { headers: auth });
      const body = (await check.json()) as { serviceAccounts?: unknown[] };
      if (check.status !== 200 || body.serviceAccounts?.length !== ACCOUNTS) {
        throw new Error(`endpoint answered ${check.status}: ${JSON.stringify(body)}`);
      }
      for (const name of TARGETS) await cannon(targets[name].url, targets[name].headers, 3); // warm up (JIT, pools)
      const runs: Record<Target, (Run & { serverUs: number; databaseUs: number })[]> = { bare: [], floor: [], authOnly: [], endpoint: [] };
      // Alternate the targets so drift (thermal, other load) hits both alike.
      for (let i = 0; i < RUNS; i++) {
        for (const name of TARGETS) {
          const [server0, database0] = [ownCpuMs(), databaseCpuMs()];
          const r = await cannon(targets[name].url, targets[name].headers, SECONDS);
          const serverUs = ((ownCpuMs() - server0) * 1000) / r.requests;
          const databaseUs = ((databaseCpuMs() - database0) * 1000) / r.requests;
          if (r.non2xx || r.errors) throw new Error(`${name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
          runs[name].push({ ...r, serverUs, databaseUs });
          console.log(
            `  ${kind} run ${i + 1} ${LABELS[name]}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms, ` +
              `CPU/request ${serverUs.toFixed(0)} µs server + ${databaseUs.toFixed(0)} µs database`,
          );
        }
      }
      const medians: Partial<Record<Target, Figures>> = {};
      for (const name of TARGETS) {
        const of = (field: keyof Figures) => median(runs[name].map((r) => r[field]));
        medians[name] = { rps: of('rps'), p99: of('p99'), serverUs: of('serverUs'), databaseUs: of('databaseUs') };
      }
      return medians;
    } finally {
      await appServer.close();
      await bareServer.close();
      await plane.stop();
      if (observed) console.log(`  observed: ${observed.close()}`);
    }
  } finally {
    await dispose();
  }
}

/**
 * Metrics and tracing on, as an operator runs them: a metrics port scraped every second, and an
 * OTLP/HTTP endpoint (a sink here that counts what it receives, so the figure includes the export).
 */
async function observedEnv(mode: 'on' | 'metrics' | 'traces'): Promise<{ env: Record<string, string>; close(): string }> {
  let exports = 0;
  let bytes = 0;
  const sink = express();
  sink.post('/v1/traces', express.raw({ type: () => true, limit: '50mb' }), (req, res) => {
    exports++;
    bytes += (req.body as Buffer).length;
    res.status(200).json({});
  });
  const sinkServer = await listen(sink);
  const metricsPort = await new Promise<number>((resolve) => {
    const probe = express().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  let scrapes = 0;
  const scraper = setInterval(
    () => {
      fetch(`http://127.0.0.1:${metricsPort}/metrics`)
        .then((r) => r.text())
        .then(
          () => scrapes++,
          () => {},
        );
    },
    Number(process.env.BENCH_SCRAPE_MS ?? 15_000),
  );
  return {
    env: {
      ...(mode === 'traces' ? {} : { AGENTPLANE_METRICS_PORT: String(metricsPort) }),
      ...(mode === 'metrics' ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: sinkServer.url }),
    },
    close: () => {
      clearInterval(scraper);
      void sinkServer.close();
      return `${scrapes} scrapes, ${exports} OTLP exports (${(bytes / 1e6).toFixed(1)} MB)`;
    },
  };
}

/** Alternating fresh processes with metrics and tracing off and on; medians side by side. */
async function compareObserved(): Promise<void> {
  const file = fileURLToPath(import.meta.url);
  const rps: Record<'off' | 'on', number[]> = { off: [], on: [] };
  const cpu: Record<'off' | 'on', number[]> = { off: [], on: [] };
  for (let i = 0; i < RUNS; i++) {
    for (const mode of ['off', 'on'] as const) {
      const out = await new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, [file], {
          env: { ...process.env, BENCH_OBSERVED: mode, BENCH_RUNS: '1', BENCH_TARGETS: 'endpoint', BENCH_BACKENDS: BACKENDS[0] },
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let text = '';
        child.stdout.on('data', (d: Buffer) => (text += d.toString()));
        child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`bench child (${mode}) exited with ${code}: ${text}`))));
      });
      const run = /service-accounts: (\d+) req\/s.*CPU\/request (\d+) µs server/.exec(out);
      if (!run) throw new Error(`no figure in the child's output: ${out}`);
      rps[mode].push(Number(run[1]));
      cpu[mode].push(Number(run[2]));
      console.log(
        `  run ${i + 1} metrics and tracing ${mode}: ${run[1]} req/s, ${run[2]} µs CPU/request${mode === 'on' ? ` (${/observed: (.*)/.exec(out)?.[1]})` : ''}`,
      );
    }
  }
  const [off, on] = [median(rps.off), median(rps.on)];
  console.log(`\nmedians (${BACKENDS[0]}, GET /api/v0/service-accounts, ${RUNS} runs x ${SECONDS} s each)`);
  console.log(
    `  off ${off.toFixed(0)} req/s   on ${on.toFixed(0)} req/s   on/off ${(on / off).toFixed(3)}x  ${on / off >= 0.9 ? 'goal met' : 'goal MISSED'} (>= 0.9x)`,
  );
  console.log(
    `  CPU/request: off ${median(cpu.off).toFixed(0)} µs   on ${median(cpu.on).toFixed(0)} µs   sampler ${process.env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on'} ${process.env.OTEL_TRACES_SAMPLER_ARG ?? ''}`,
  );
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const results: string[] = [];
if (process.env.BENCH_OBSERVED === 'compare') {
  await compareObserved();
  process.exit(0);
}
for (const kind of BACKENDS) {
  console.log(`${kind}: ${RUNS} runs x ${SECONDS} s per target, ${CONNECTIONS} connections`);
  const medians = await benchBackend(kind);
  results.push(`${kind}:`);
  for (const name of TARGETS) {
    const { rps, p99, serverUs, databaseUs } = medians[name]!;
    const ofBare = medians.bare && name !== 'bare' ? `  (${pct(rps / medians.bare.rps)} of bare)` : '';
    const cpu = `CPU/req ${serverUs.toFixed(0).padStart(4)} µs server + ${databaseUs.toFixed(0).padStart(3)} µs db`;
    results.push(`  ${SHORT[name].padEnd(17)} ${rps.toFixed(0).padStart(6)} req/s  p99 ${String(p99).padStart(3)} ms  ${cpu}${ofBare}`);
  }
  const { bare, endpoint } = medians;
  if (bare && endpoint) {
    const ratio = endpoint.rps / bare.rps;
    const verdict = ratio >= 0.5 && endpoint.p99 < 25 ? 'goal met' : 'goal MISSED';
    results.push(`  ${verdict}: service-accounts at ${pct(ratio)} of bare (goal >= 50%), p99 ${endpoint.p99} ms (goal < 25 ms)`);
  }
}
console.log('\nmedians');
for (const line of results) console.log(line);
