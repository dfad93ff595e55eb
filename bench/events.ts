/**
 * Live events benchmark, on PGlite and on PostgreSQL. Run on demand:
 *
 *   node bench/events.ts
 *   BENCH_BACKENDS=postgres BENCH_CLIENTS=1000 BENCH_SECONDS=10 node bench/events.ts
 *
 * 1. Latency from a turn's step being stored (a message appended in its transaction, as the
 *    runtime does) to an SSE client receiving it: same replica, and on PostgreSQL a client on a
 *    second replica (another app on its own connections). Goal p50 < 50 ms, p99 < 200 ms.
 * 2. 1,000 idle stream clients (held by a child process, so their memory is not the server's) on
 *    one replica: the authenticated-list benchmark (bench/http.ts's `GET /api/v0/service-accounts`,
 *    autocannon with 50 connections in a child process) with and without them. Goal: under 10% of
 *    its requests/s lost. Prints the server's memory per idle client.
 * 3. Webhook deliveries per second: events fanned out to endpoints on a loopback receiver,
 *    delivered by the job worker (16 attempts at once per process, 4 per endpoint).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { compose } from '../src/compose.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase, type Database } from '../src/db/client.ts';
import { migrateDatabase } from '../src/db/migrations.ts';
import { createEgressGuard } from '../src/egress/guard.ts';
import { parseEgressAllow } from '../src/egress/policy.ts';
import { createJobQueue } from '../src/jobs/queue.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { createLogger } from '../src/lib/logger.ts';
import { publish } from '../src/modules/events/publish.ts';
import { bootstrapOrganization } from '../src/modules/organization/bootstrap.ts';
import { appendMessage } from '../src/modules/sessions/store.ts';
import { startWebhookDispatcher } from '../src/modules/webhooks/dispatcher.ts';
import { webhookJobs } from '../src/modules/webhooks/jobs.ts';
import { createWebhooksService } from '../src/modules/webhooks/service.ts';
import { createProviderRegistry } from '../src/provisioning/providers/registry.ts';
import { startPostgres } from '../test/support/postgres-server.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const AUTOCANNON = path.join(ROOT, 'node_modules', '.bin', 'autocannon');
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'pglite,postgres').split(',');
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 1000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const STEPS = Number(process.env.BENCH_STEPS ?? 300);
const WEBHOOK_EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 500);
const WEBHOOK_ENDPOINTS = 4;
const log = createLogger({ level: 'silent' });

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const median = (xs: number[]) => quantile(xs, 0.5);

interface Backend {
  db: Database;
  dataDir: string;
  /** A second database handle (another replica's connections) on PostgreSQL. */
  replica?: () => Promise<Database>;
  dispose(): Promise<void>;
}

async function openBackend(kind: string): Promise<Backend> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-bench-events-'));
  const removeDir = () => fs.rmSync(dataDir, { recursive: true, force: true });
  if (kind === 'pglite') {
    const db = await openDatabase({ dataDir });
    await migrateDatabase(db, log);
    return { db, dataDir, dispose: async () => (await db.close(), removeDir()) };
  }
  const server = await startPostgres();
  if (!server) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('CREATE DATABASE bench');
  await admin.end();
  const url = new URL(server.url);
  url.pathname = '/bench';
  const db = await openDatabase({ databaseUrl: url.toString(), dataDir });
  await migrateDatabase(db, log);
  const replicas: Database[] = [];
  return {
    db,
    dataDir,
    replica: async () => {
      const other = await openDatabase({ databaseUrl: url.toString(), dataDir });
      replicas.push(other);
      return other;
    },
    dispose: async () => {
      for (const r of replicas) await r.close();
      await db.close();
      server.stop();
      removeDir();
    },
  };
}

/** The API on one database handle, with its own event hub: one replica. */
async function serveReplica(db: Database, dataDir: string) {
  const config = loadConfig({
    AGENTPLANE_DATA_DIR: dataDir,
    AGENTPLANE_EGRESS_ALLOW: '127.0.0.0/8',
    AGENTPLANE_EVENTS_HEARTBEAT_SECONDS: process.env.AGENTPLANE_EVENTS_HEARTBEAT_SECONDS ?? '15',
  });
  const plane = await compose({
    config,
    db,
    log,
    overrides: { providers: createProviderRegistry([]), queue: { send: () => Promise.reject(new Error('the benchmarked routes send no jobs')) } },
  });
  await plane.start();
  const { url } = await plane.listen(0, '127.0.0.1');
  // No grace: the hub ends the streams, and what is still open is closed at once.
  return { url, hub: plane.hub, machines: plane.machines, close: () => plane.stop(0) };
}

/** An SSE client that records when each event id arrived. */
function sseArrivals(url: string, token: string): Promise<{ arrivals: Map<string, number>; close(): void }> {
  return new Promise((resolve, reject) => {
    const arrivals = new Map<string, number>();
    const req = http.get(url, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const now = performance.now();
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = /^id: (\d+)$/m.exec(frame)?.[1];
          if (id) arrivals.set(id, now);
        }
      });
      resolve({ arrivals, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

/** Appends STEPS messages one at a time, as a turn stores its steps; answers each event id's commit time. */
async function storeSteps(db: Database, sessionId: string): Promise<Map<string, number>> {
  const committed = new Map<string, number>();
  for (let i = 0; i < STEPS; i++) {
    await db.prisma.$transaction((tx) =>
      appendMessage(tx, sessionId, { role: 'assistant', content: [{ type: 'text', text: `step ${i}: ${'x'.repeat(200)}` }] }, new Date()),
    );
    const at = performance.now();
    const last = await db.prisma.event.findFirstOrThrow({ where: { sessionId }, orderBy: { id: 'desc' }, select: { id: true } });
    committed.set(last.id.toString(), at);
    await new Promise((r) => setTimeout(r, 10));
  }
  return committed;
}

function latencies(committed: Map<string, number>, arrivals: Map<string, number>): string {
  const ms = [...committed].map(([id, at]) => arrivals.get(id)! - at).filter((x) => Number.isFinite(x));
  const lost = committed.size - ms.length;
  return `p50 ${median(ms).toFixed(1)} ms, p99 ${quantile(ms, 0.99).toFixed(1)} ms over ${ms.length} steps${lost ? ` (${lost} NOT received)` : ''}`;
}

/** Holds `n` idle SSE connections from a child process until killed; resolves once all are open. */
function idleClients(url: string, token: string, n: number) {
  const code = `
    const http = require('node:http');
    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    let open = 0;
    for (let i = 0; i < ${n}; i++) {
      const req = http.get(${JSON.stringify(url)}, { agent, headers: { authorization: 'Bearer ${token}' } }, (res) => {
        if (res.statusCode !== 200) { console.error('status ' + res.statusCode); process.exit(1); }
        res.resume();
        if (++open === ${n}) console.log('open');
      });
      req.on('error', (err) => { console.error(err.message); process.exit(1); });
    }`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => d.toString().includes('open') && resolve());
    child.on('exit', (c) => reject(new Error(`idle clients exited with ${c}`)));
  });
  return { ready, stop: () => child.kill('SIGKILL') };
}

/** One autocannon run; answers its requests/s and the CPU each request cost this process (the server, and PGlite). */
function cannon(url: string, token: string, seconds: number): Promise<{ rps: number; cpuUs: number }> {
  const cpu0 = process.cpuUsage();
  return new Promise((resolve, reject) => {
    const child = spawn(AUTOCANNON, ['-c', '50', '-d', String(seconds), '-j', '-H', `authorization=Bearer ${token}`, url], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}`));
      const r = JSON.parse(out) as { requests: { average: number; total: number }; non2xx: number; errors: number };
      if (r.non2xx || r.errors) return reject(new Error(`${r.non2xx} non-2xx, ${r.errors} errors`));
      const used = process.cpuUsage(cpu0);
      resolve({ rps: r.requests.average, cpuUs: (used.user + used.system) / r.requests.total });
    });
  });
}

const settle = async () => {
  for (let i = 0; i < 3; i++) {
    (globalThis as { gc?: () => void }).gc?.();
    await new Promise((r) => setTimeout(r, 300));
  }
  return process.memoryUsage();
};

async function benchBackend(kind: string): Promise<string[]> {
  const out: string[] = [];
  const backend = await openBackend(kind);
  const { db, dataDir } = backend;
  try {
    const boot = await bootstrapOrganization(db.prisma, { org: 'bench', email: 'owner@bench.test' }, systemClock);
    await db.prisma.serviceAccount.createMany({
      data: Array.from({ length: 10 }, (_, i) => ({ id: newId('sa'), organizationId: boot.organizationId, name: `bench-${i}`, createdBy: boot.userId })),
    });
    const token = boot.apiKey!;
    const computer = await db.prisma.computer.create({
      data: {
        id: newId('cmp'),
        organizationId: boot.organizationId,
        ownerKind: 'human',
        ownerId: boot.userId,
        name: 'bench',
        liveName: 'bench',
        providerType: 'byom',
        status: 'active',
        remoteUser: 'bench',
        createdBy: boot.userId,
      },
    });
    const session = await db.prisma.session.create({
      data: {
        id: newId('ses'),
        organizationId: boot.organizationId,
        ownerKind: 'human',
        ownerId: boot.userId,
        computerId: computer.id,
        cwd: '/',
        status: 'running',
        settings: {},
      },
    });
    const a = await serveReplica(db, dataDir);
    try {
      // 1. Latency, same replica and across replicas.
      const streamPath = `/api/v0/sessions/${session.id}/events`;
      const same = await sseArrivals(`${a.url}${streamPath}`, token);
      const replicaDb = backend.replica ? await backend.replica() : undefined;
      const b = replicaDb ? await serveReplica(replicaDb, dataDir) : undefined;
      const cross = b ? await sseArrivals(`${b.url}${streamPath}`, token) : undefined;
      await new Promise((r) => setTimeout(r, 300));
      const committed = await storeSteps(db, session.id);
      await new Promise((r) => setTimeout(r, 500));
      same.close();
      cross?.close();
      await b?.close();
      out.push(`  step stored -> SSE received, same replica:  ${latencies(committed, same.arrivals)}`);
      out.push(
        cross ? `  step stored -> SSE received, other replica: ${latencies(committed, cross.arrivals)}` : '  other replica: n/a (PGlite is one process)',
      );

      // 2. Idle clients against the authenticated list.
      const list = `${a.url}/api/v0/service-accounts`;
      await cannon(list, token, 3);
      const without: { rps: number; cpuUs: number }[] = [];
      const withClients: { rps: number; cpuUs: number }[] = [];
      const memBefore = await settle();
      // Alternating runs, so drift (other load on the machine) hits both alike.
      for (let i = 0; i < RUNS; i++) {
        without.push(await cannon(list, token, SECONDS));
        const clients = idleClients(`${a.url}/api/v0/events`, token, CLIENTS);
        await clients.ready;
        if (i === 0) {
          const memWith = await settle();
          out.push(
            `  ${CLIENTS} idle streams on one replica (${a.hub.size()} subscribed): ` +
              `${((memWith.heapUsed - memBefore.heapUsed) / CLIENTS / 1024).toFixed(1)} KiB heap, ` +
              `${((memWith.rss - memBefore.rss) / CLIENTS / 1024).toFixed(1)} KiB RSS per client`,
          );
        }
        withClients.push(await cannon(list, token, SECONDS));
        clients.stop();
        await new Promise((r) => setTimeout(r, 500));
      }
      const [w0, w1] = [median(without.map((r) => r.rps)), median(withClients.map((r) => r.rps))];
      const [c0, c1] = [median(without.map((r) => r.cpuUs)), median(withClients.map((r) => r.cpuUs))];
      const loss = 1 - w1 / w0;
      out.push(
        `  authenticated list: ${w0.toFixed(0)} req/s alone, ${w1.toFixed(0)} req/s beside ${CLIENTS} streams: ` +
          `${(loss * 100).toFixed(1)}% lost (goal < 10%: ${loss < 0.1 ? 'met' : 'MISSED'}), medians of ${RUNS} x ${SECONDS} s; ` +
          `server CPU/request ${c0.toFixed(0)} µs alone, ${c1.toFixed(0)} µs beside them (${(((c1 - c0) / c0) * 100).toFixed(1)}%)`,
      );
      out.push(
        `    runs alone: ${without.map((r) => r.rps.toFixed(0)).join(', ')} req/s; beside streams: ${withClients.map((r) => r.rps.toFixed(0)).join(', ')} req/s`,
      );

      // 3. Webhook deliveries per second.
      out.push(`  ${await webhookThroughput(db, a.machines.secrets, boot.organizationId, boot.userId)}`);
    } finally {
      await a.close();
    }
  } finally {
    await backend.dispose();
  }
  return out;
}

async function webhookThroughput(db: Database, secrets: Parameters<typeof webhookJobs>[0]['secrets'], organizationId: string, userId: string): Promise<string> {
  let received = 0;
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  const total = WEBHOOK_EVENTS * WEBHOOK_ENDPOINTS;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(204).end();
      if (++received === total) done();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const config = loadConfig({ AGENTPLANE_EGRESS_ALLOW: '127.0.0.0/8' });
  const egress = createEgressGuard(parseEgressAllow('127.0.0.0/8'));
  const service = createWebhooksService({ db: db.prisma, clock: systemClock, secrets, egress });
  const principal = { kind: 'user' as const, userId, email: 'owner@bench.test', organizationId, role: 'owner' as const, credential: 'api_key' as const };
  for (let i = 0; i < WEBHOOK_ENDPOINTS; i++) await service.create(principal, { url, eventTypes: ['session.idle'] });
  const queue = createJobQueue(db, {
    log,
    jobs: webhookJobs({ db: db.prisma, clock: systemClock, secrets, egress, settings: config.webhooks }),
    pollingIntervalSeconds: 0.5,
  });
  await queue.start();
  await queue.work();
  const dispatcher = await startWebhookDispatcher({
    db: db.prisma,
    listen: db.listen,
    queue,
    clock: systemClock,
    log,
    endpointConcurrency: config.webhooks.endpointConcurrency,
  });
  const started = performance.now();
  for (let i = 0; i < WEBHOOK_EVENTS; i += 50) {
    await publish(
      db.prisma,
      Array.from({ length: Math.min(50, WEBHOOK_EVENTS - i) }, (_, n) => ({
        type: 'session.idle' as const,
        organizationId,
        data: { sessionId: `ses_${i + n}`, status: 'idle' },
      })),
    );
  }
  await all;
  const seconds = (performance.now() - started) / 1000;
  await dispatcher.stop();
  await queue.stop({ timeoutMs: 5_000 });
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  const succeeded = await db.prisma.webhookDelivery.count({ where: { status: 'succeeded' } });
  return `webhooks: ${total} deliveries (${WEBHOOK_ENDPOINTS} endpoints x ${WEBHOOK_EVENTS} events) in ${seconds.toFixed(1)} s: ${(total / seconds).toFixed(0)} deliveries/s (${succeeded} logged succeeded)`;
}

const results: string[] = [];
for (const kind of BACKENDS) {
  console.log(`${kind}: ${STEPS} steps, ${CLIENTS} idle clients, ${RUNS} x ${SECONDS} s list runs, ${WEBHOOK_EVENTS * WEBHOOK_ENDPOINTS} webhooks`);
  const lines = await benchBackend(kind);
  for (const l of lines) console.log(l);
  results.push(`${kind}:`, ...lines);
}
console.log('\nresults');
for (const line of results) console.log(line);
process.exit(0);
