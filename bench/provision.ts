/**
 * Provisioning benchmark of the local provider with the real Pulumi CLI, a real `agentplane serve`
 * on PostgreSQL, and warm pools. Run on demand, as root:
 *
 *   node bench/provision.ts
 *   BENCH_RUNS=5 BENCH_CLAIMS=20 BENCH_BULK=20 BENCH_COLD_BULK=10 node bench/provision.ts
 *
 * Prints, in one run, beside the cold path as the baseline:
 * - POST -> `active` from the pool (the 201 is already active): median and p99 (goal < 100 / 300 ms);
 * - POST -> the first command answered over SSH with the claimed computer's own key, on a new
 *   connection as a user's would be (goal median < 150 ms);
 * - a bulk of BENCH_BULK from a pool of as many: all active (goal < 1 s);
 * - one cold computer POST -> active (goal < 1.5 s), and a cold bulk of BENCH_COLD_BULK against it
 *   (goal < 3x one computer), with each computer's `pulumi up` and set-up share, the CPU-seconds
 *   the machine spent on each, and the least time a bulk can take on this machine's cores when each
 *   of its computers costs what one alone did (the cold path is CPU-bound).
 * - with Gitea built (scripts/gitea-toolchain.sh), the program figures of bench/provision-program.ts:
 *   a computer made from a template's Pulumi YAML program (the dial-in example) beside one `local`
 *   computer, and claims from that template's warm pool.
 * Every computer is deleted again and its teardown waited for between phases. BENCH_ONLY picks
 * phases (default `cold,pool,program`); the cold single computer, the baseline, always runs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSecretBox, loadEncryptionKey } from '../src/lib/secret-box.ts';
import { createLogger } from '../src/lib/logger.ts';
import { createSshClient } from '../src/ssh/index.ts';
import { localProviderMissing } from '../test/support/local-computers.ts';
import { startServerProcess } from '../test/support/server-process.ts';
import { connectSse, type SseClient } from '../test/support/sse.ts';
import { openBenchPostgres } from './postgres-database.ts';
import { agentplaneOnPath, programBenchMissing, programFigures } from './provision-program.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 20);
const BULK = Number(process.env.BENCH_BULK ?? 20);
const COLD_BULK = Number(process.env.BENCH_COLD_BULK ?? 10);
const ONLY = new Set((process.env.BENCH_ONLY ?? 'cold,pool,program').split(','));

interface Step {
  id: string;
  status: string;
  startedAt?: number;
  completedAt?: number;
}
interface Computer {
  id: string;
  name: string;
  status: string;
  provisioningSteps?: Step[];
}
interface Timing {
  /** POST sent -> seen active. */
  total: number;
  /** The create-infrastructure step (pulumi up). */
  pulumi: number;
  /** From the end of `pulumi up` to the last step's end (SSH, workspace). */
  setup: number;
  /** Each step after `pulumi up`: ms from the previous step's end to its start, and its own ms. */
  steps: Record<string, { wait: number; run: number }>;
}
interface Api {
  call(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }>;
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => {
  const s = sorted(xs);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const p99 = (xs: number[]) => sorted(xs)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.99) - 1)]!;
const ms = (x: number) => `${x.toFixed(0)} ms`;
const goal = (ok: boolean) => (ok ? 'met' : 'NOT met');
const sleep = (x: number) => new Promise((r) => setTimeout(r, x));

/**
 * CPU-seconds the whole machine has spent busy (every process: the server, PostgreSQL, the Pulumi
 * CLI and plugins, the computers' scripts and sshd, this benchmark), from /proc/stat's first line
 * in USER_HZ ticks. The cold path is CPU-bound, so these say what a figure can be on this machine.
 */
const USER_HZ = 100;
function busyCpuSeconds(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (user! + nice! + system! + irq! + softirq! + (steal ?? 0)) / USER_HZ;
}

async function list(api: Api, deleted = false): Promise<Computer[]> {
  const q = `includeProvisioningSteps=true${deleted ? '&includeDeleted=true' : ''}`;
  return (await api.call('GET', `/api/v0/computers?${q}`)).body.computers;
}

function timingOf(c: Computer, sentAt: number, seenAt: number): Timing {
  const steps = c.provisioningSteps!;
  const infra = steps.find((s) => s.id === 'create-infrastructure')!;
  const last = Math.max(...steps.map((s) => s.completedAt ?? 0));
  const after = steps.filter((s) => s.startedAt && s.completedAt && s.startedAt >= infra.completedAt!).sort((a, b) => a.startedAt! - b.startedAt!);
  let prev = infra.completedAt!;
  const phases: Timing['steps'] = {};
  for (const step of after) {
    phases[step.id] = { wait: step.startedAt! - prev, run: step.completedAt! - step.startedAt! };
    prev = step.completedAt!;
  }
  return { total: seenAt - sentAt, pulumi: infra.completedAt! - infra.startedAt!, setup: last - infra.completedAt!, steps: phases };
}

/**
 * Waits, as a client would, on the organization's event stream (opened before the requests are
 * sent) until every id's `computer.active` arrived; answers each one's timing from `sentAt`, with
 * its steps read once at the end. (Polling the list every 20 ms, as this did before, put its own
 * load on the cores the cold bulk is measured on.)
 */
async function untilActive(api: Api, events: SseClient, sentAt: Map<string, number>): Promise<Map<string, Timing>> {
  const seenAt = new Map<string, number>();
  await Promise.all(
    [...sentAt.keys()].map(async (id) => {
      const e = await events.waitFor(
        (e) => e.data?.computerId === id && (e.event === 'computer.active' || e.event === 'computer.error'),
        120_000,
        `${id} active`,
      );
      if (e.event !== 'computer.active') throw new Error(`${id} ended in error: ${JSON.stringify(e.data)}`);
      seenAt.set(id, Date.now());
    }),
  );
  const byId = new Map((await list(api)).map((c) => [c.id, c]));
  return new Map([...sentAt].map(([id, sent]) => [id, timingOf(byId.get(id)!, sent, seenAt.get(id)!)]));
}

async function deleteAll(api: Api): Promise<void> {
  const live = await list(api);
  await Promise.all(live.map((c) => api.call('DELETE', `/api/v0/computers/${c.id}`)));
  const ids = new Set(live.map((c) => c.id));
  for (;;) {
    const pending = (await list(api, true)).filter((c) => ids.has(c.id) && c.provisioningSteps?.find((s) => s.id === 'teardown')?.status !== 'completed');
    if (pending.length === 0) return;
    await sleep(200);
  }
}

async function setPool(api: Api, size: number): Promise<void> {
  const res = await api.call('PUT', '/api/v0/computers/pool/providers/local', { warmPoolSize: size });
  if (res.status !== 200) throw new Error(`PUT pool answered ${res.status}: ${JSON.stringify(res.body)}`);
  for (;;) {
    const pool = (await api.call('GET', '/api/v0/computers/pool')).body.pools.find((p: { templateId?: string }) => !p.templateId);
    if ((pool?.ready ?? 0) === size && (pool?.provisioning ?? 0) === 0) return;
    if (pool?.failed) throw new Error(`the pool has ${pool.failed} failed computers`);
    await sleep(100);
  }
}

async function main() {
  const missing = await localProviderMissing();
  if (missing) throw new Error(missing);
  const pg = await openBenchPostgres('bench_provision', createLogger({ level: 'silent' }));
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'agentplane-bench-'));
  const onPath = agentplaneOnPath();
  const server = await startServerProcess({
    AGENTPLANE_DATA_DIR: dataDir,
    AGENTPLANE_LOCAL_PROVIDER: 'true',
    DATABASE_URL: pg.url,
    // The program figures: the dial-in example runs `agentplane`; its repository is on a loopback Gitea.
    PATH: `${onPath.dir}:${process.env.PATH}`,
    AGENTPLANE_EGRESS_ALLOW: '127.0.0.0/8',
  });
  const secrets = createSecretBox(loadEncryptionKey({ dataDir }));
  const api: Api = {
    call: async (method, p, body) => {
      const res = await fetch(`${server.url}${p}`, {
        method,
        headers: { authorization: `Bearer ${server.firstStartKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
  };
  const events = await connectSse(`${server.url}/api/v0/events?types=computer.active,computer.error`, { token: server.firstStartKey! });
  if (events.status !== 200) throw new Error(`the event stream answered ${events.status}`);
  const createTimed = async (body: Record<string, unknown>): Promise<Timing> => {
    const sent = Date.now();
    const res = await api.call('POST', '/api/v0/computers', body);
    if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
    return (await untilActive(api, events, new Map([[res.body.id, sent]]))).get(res.body.id)!;
  };
  const createOne = (name: string) => createTimed({ name, provider: 'local' });
  try {
    // Warm-up: the first run loads the Pulumi CLI and plugin from a cold cache.
    await createOne('warm-up');
    await deleteAll(api);

    // The baseline: cold, one at a time, then a cold bulk.
    const singles: Timing[] = [];
    const singleCpu: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const cpu0 = busyCpuSeconds();
      singles.push(await createOne(`single-${i}`));
      singleCpu.push(busyCpuSeconds() - cpu0);
      await deleteAll(api);
    }
    const one = median(singles.map((t) => t.total));
    const oneCpu = median(singleCpu);
    const cores = os.availableParallelism();
    console.log(
      `cold, one computer (${RUNS} runs): POST -> active median ${ms(one)} p99 ${ms(p99(singles.map((t) => t.total)))} ` +
        `(pulumi up ${ms(median(singles.map((t) => t.pulumi)))}, set-up ${ms(median(singles.map((t) => t.setup)))}); ` +
        `${oneCpu.toFixed(2)} CPU-s (${(oneCpu / (one / 1000)).toFixed(2)} of ${cores} cores busy); goal < 1500 ms: ${goal(one < 1500)}`,
    );
    const coldWall = ONLY.has('cold') ? await coldBulkFigures(one, oneCpu) : undefined;
    if (ONLY.has('pool')) await poolFigures(one, coldWall);
    const missingProgram = programBenchMissing();
    if (ONLY.has('program') && missingProgram) console.log(`program figures skipped: ${missingProgram}`);
    else if (ONLY.has('program')) {
      await programFigures({
        api,
        createTimed,
        deleteAll: () => deleteAll(api),
        localMedianMs: one,
        runs: RUNS,
        claims: CLAIMS,
      });
    }
  } catch (err) {
    console.error(
      server
        .output()
        .split('\n')
        .filter((l) => /"level":(40|50|60)/.test(l))
        .slice(-10)
        .join('\n'),
    );
    throw err;
  } finally {
    events.close();
    await api.call('PUT', '/api/v0/computers/pool/providers/local', { warmPoolSize: 0 }).catch(() => undefined);
    await deleteAll(api).catch(() => undefined);
    // The pool's computers are torn down by the server too.
    for (let i = 0; i < 600 && (await pg.db.prisma.computer.count({ where: { OR: [{ deletedAt: null }, { operation: 'teardown' }] } })) > 0; i++) {
      await sleep(200);
    }
    await server.stop();
    await pg.stop();
    onPath.remove();
    rmSync(dataDir, { recursive: true, force: true });
  }

  async function coldBulkFigures(one: number, oneCpu: number): Promise<number> {
    const cores = os.availableParallelism();
    const cpu0 = busyCpuSeconds();
    const t0 = Date.now();
    const bulk = await api.call('POST', '/api/v0/computers/bulk', { quantity: COLD_BULK, namePrefix: 'cold', provider: 'local' });
    if (bulk.status !== 201 || bulk.body.error) throw new Error(`bulk answered ${bulk.status}: ${JSON.stringify(bulk.body)}`);
    const coldBulk = [...(await untilActive(api, events, new Map(bulk.body.computers.map((c: Computer) => [c.id, t0])))).values()];
    const coldWall = Math.max(...coldBulk.map((t) => t.total));
    const bulkCpu = busyCpuSeconds() - cpu0;
    // All cores busy for the whole bulk, at one computer's own cost each: the least it can take here.
    const floor = (COLD_BULK * oneCpu) / cores;
    console.log(
      `cold bulk of ${COLD_BULK}: all active after ${ms(coldWall)} = ${(coldWall / one).toFixed(1)}x one computer ` +
        `(pulumi up median ${ms(median(coldBulk.map((t) => t.pulumi)))}, max ${ms(Math.max(...coldBulk.map((t) => t.pulumi)))}); ` +
        `${bulkCpu.toFixed(2)} CPU-s = ${(bulkCpu / COLD_BULK).toFixed(2)} per computer; ` +
        `on ${cores} cores no less than ${ms(floor * 1000)} = ${(floor / (one / 1000)).toFixed(1)}x one computer; goal < 3x: ${goal(coldWall < 3 * one)}`,
    );
    await deleteAll(api);
    return coldWall;
  }

  async function poolFigures(one: number, coldWall: number | undefined) {
    // From the pool: claims one after another, each followed by a command over SSH with its own key.
    const fillStart = Date.now();
    await setPool(api, Math.max(CLAIMS, BULK));
    console.log(`pool of ${Math.max(CLAIMS, BULK)} filled in ${ms(Date.now() - fillStart)}`);
    const ssh = createSshClient();
    const toActive: number[] = [];
    const toCommand: number[] = [];
    for (let i = 0; i < CLAIMS; i++) {
      const sent = performance.now();
      const res = await api.call('POST', '/api/v0/computers', { name: `warm-${i}`, provider: 'local' });
      const answered = performance.now();
      if (res.status !== 201 || res.body.status !== 'active') throw new Error(`claim answered ${res.status} ${res.body.status}`);
      toActive.push(answered - sent);
      const row = await pg.db.prisma.computer.findUniqueOrThrow({ where: { id: res.body.id } });
      const target = {
        host: row.sshHost!,
        port: row.sshPort!,
        username: row.remoteUser!,
        hostKeyFingerprint: row.hostKeyFingerprint!,
        privateKey: secrets.open(row.sshKeyCiphertext!),
      };
      const readAt = performance.now();
      const out = await ssh.exec(target, 'true');
      if (out.exitCode !== 0) throw new Error(`the first command exited ${out.exitCode}`);
      // The key lookup above is the benchmark's own bookkeeping, not the user's wait.
      toCommand.push(answered - sent + (performance.now() - readAt));
    }
    await ssh.close();
    console.log(
      `pool, POST -> active (${CLAIMS} claims): median ${ms(median(toActive))} p99 ${ms(p99(toActive))}; ` +
        `goal < 100 / 300 ms: ${goal(median(toActive) < 100 && p99(toActive) < 300)}  [cold baseline ${ms(one)}]`,
    );
    console.log(
      `pool, POST -> first command over SSH: median ${ms(median(toCommand))} p99 ${ms(p99(toCommand))}; goal < 150 ms: ${goal(median(toCommand) < 150)}`,
    );
    await deleteAll(api);
    await setPool(api, BULK);
    const b0 = performance.now();
    const warmBulk = await api.call('POST', '/api/v0/computers/bulk', { quantity: BULK, namePrefix: 'warm', provider: 'local' });
    const bulkMs = performance.now() - b0;
    const active = (warmBulk.body.computers as Computer[]).filter((c) => c.status === 'active').length;
    console.log(
      `pool, bulk of ${BULK} from a pool of ${BULK}: ${active} active at the 201, after ${ms(bulkMs)}; goal all < 1000 ms: ${goal(active === BULK && bulkMs < 1000)}  ` +
        (coldWall === undefined ? '' : `[cold bulk of ${COLD_BULK}: ${ms(coldWall)}]`),
    );
    await setPool(api, 0);
    await deleteAll(api);
  }
}

await main();
