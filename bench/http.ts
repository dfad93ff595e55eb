/**
 * HTTP benchmark: authenticated `GET /api/v0/service-accounts` against a bare Express "hello"
 * route served by the same process, on PGlite and on PostgreSQL. Run on demand:
 *
 *   node bench/http.ts                 # 5 runs of 10 s per target and backend
 *   BENCH_RUNS=3 BENCH_SECONDS=5 BENCH_BACKENDS=pglite node bench/http.ts
 *
 * The load generator (autocannon, 50 connections) runs in a child process so it does not share
 * the server's event loop. Goal: the endpoint keeps >= 50% of the bare route's requests/s with a
 * p99 latency under 25 ms. A third target, `GET /api/v0/computers/providers` (authenticated, no
 * database work of its own), separates the cost of authentication from the endpoint's own.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import pg from 'pg';
import { createApp } from '../src/app.ts';
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

const TARGETS = ['bare', 'authOnly', 'endpoint'] as const;
type Target = (typeof TARGETS)[number];
const LABELS: Record<Target, string> = {
  bare: 'bare Express GET /hello',
  authOnly: 'GET /api/v0/computers/providers (authentication only)',
  endpoint: 'GET /api/v0/service-accounts',
};

interface Run {
  rps: number;
  p99: number;
  non2xx: number;
  errors: number;
}

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
        requests: { average: number };
        latency: { p99: number };
        non2xx: number;
        errors: number;
      };
      resolve({ rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors });
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

async function openBackend(kind: string): Promise<{ db: Database; dispose(): Promise<void> }> {
  const log = createLogger({ level: 'silent' });
  if (kind === 'pglite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-bench-'));
    const db = await openDatabase({ dataDir: dir });
    await migrateDatabase(db, log);
    return {
      db,
      dispose: async () => {
        await db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const server = await startPostgres();
  if (!server) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('CREATE DATABASE bench');
  await admin.end();
  const url = new URL(server.url);
  url.pathname = '/bench';
  const db = await openDatabase({ databaseUrl: url.toString(), dataDir: os.tmpdir() });
  await migrateDatabase(db, log);
  return {
    db,
    dispose: async () => {
      await db.close();
      server.stop();
    },
  };
}

async function benchBackend(kind: string) {
  const { db, dispose } = await openBackend(kind);
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
    const { app } = createApp({
      config: loadConfig({}),
      prisma: db.prisma,
      log: createLogger({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' }),
      clock: systemClock,
      providers: createProviderRegistry([]),
      pendingMigrations: async () => [],
    });
    const bare = express();
    bare.get('/hello', (_req, res) => {
      res.json({ hello: 'world' });
    });
    const [appServer, bareServer] = [await listen(app), await listen(bare)];
    const auth = { authorization: `Bearer ${boot.apiKey}` };
    const targets: Record<Target, { url: string; headers: Record<string, string> }> = {
      bare: { url: `${bareServer.url}/hello`, headers: {} },
      authOnly: { url: `${appServer.url}/api/v0/computers/providers`, headers: auth },
      endpoint: { url: `${appServer.url}/api/v0/service-accounts`, headers: auth },
    };
    try {
      const check = await fetch(targets.endpoint.url, { headers: auth });
      const body = (await check.json()) as { serviceAccounts?: unknown[] };
      if (check.status !== 200 || body.serviceAccounts?.length !== ACCOUNTS) {
        throw new Error(`endpoint answered ${check.status}: ${JSON.stringify(body)}`);
      }
      for (const t of Object.values(targets)) await cannon(t.url, t.headers, 3); // warm up (JIT, pools)
      const runs: Record<Target, Run[]> = { bare: [], authOnly: [], endpoint: [] };
      // Alternate the targets so drift (thermal, other load) hits both alike.
      for (let i = 0; i < RUNS; i++) {
        for (const name of TARGETS) {
          const r = await cannon(targets[name].url, targets[name].headers, SECONDS);
          if (r.non2xx || r.errors) throw new Error(`${name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
          runs[name].push(r);
          console.log(`  ${kind} run ${i + 1} ${LABELS[name]}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms`);
        }
      }
      const m = (name: Target) => ({ rps: median(runs[name].map((r) => r.rps)), p99: median(runs[name].map((r) => r.p99)) });
      return { bare: m('bare'), authOnly: m('authOnly'), endpoint: m('endpoint') };
    } finally {
      await appServer.close();
      await bareServer.close();
    }
  } finally {
    await dispose();
  }
}

const results: string[] = [];
for (const kind of BACKENDS) {
  console.log(`${kind}: ${RUNS} runs x ${SECONDS} s per target, ${CONNECTIONS} connections`);
  const { bare, authOnly, endpoint } = await benchBackend(kind);
  const ratio = endpoint.rps / bare.rps;
  const verdict = ratio >= 0.5 && endpoint.p99 < 25 ? 'goal met' : 'goal MISSED';
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  results.push(
    `${kind}:`,
    `  bare              ${bare.rps.toFixed(0).padStart(6)} req/s  p99 ${bare.p99} ms`,
    `  auth only         ${authOnly.rps.toFixed(0).padStart(6)} req/s  p99 ${authOnly.p99} ms  (${pct(authOnly.rps / bare.rps)} of bare)`,
    `  service-accounts  ${endpoint.rps.toFixed(0).padStart(6)} req/s  p99 ${endpoint.p99} ms  ` +
      `(${pct(ratio)} of bare, ${pct(endpoint.rps / authOnly.rps)} of auth only)`,
    `  ${verdict}: >= 50% of bare and p99 < 25 ms`,
  );
}
console.log('\nmedians');
for (const line of results) console.log(line);
