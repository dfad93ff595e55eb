/**
 * Provisioning benchmark of the local provider with the real Pulumi CLI. Run on demand, as root:
 *
 *   node bench/provision.ts                    # 5 single runs, then 20 sequential and a bulk of 20
 *   BENCH_RUNS=3 BENCH_QUANTITY=10 node bench/provision.ts
 *
 * Measures the time from POST /computers to `active` for one computer (median of the runs; goal
 * under 15 s), and the wall time of a bulk creation of 20 against 20 creations one after another
 * (goal: the bulk under 4x one computer). "Pulumi" is the create-infrastructure step (one
 * `pulumi up` of the computer's stack); its share is of each computer's time to active. Every
 * computer is deleted again and its teardown waited for between phases.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { localProviderMissing } from '../test/support/local-computers.ts';
import { startServerProcess } from '../test/support/server-process.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const QUANTITY = Number(process.env.BENCH_QUANTITY ?? 20);

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
  createdAt: number;
  provisioningSteps?: Step[];
  deletedAt?: number;
}
interface Timing {
  /** POST sent -> seen active. */
  total: number;
  /** The create-infrastructure step (pulumi up). */
  pulumi: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
/** The API of a running `agentplane serve`, as one caller. */
interface Api {
  call(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }>;
}

const sec = (x: number) => `${(x / 1000).toFixed(2)} s`;
const pct = (x: number) => `${(x * 100).toFixed(0)}%`;

async function list(api: Api, deleted = false): Promise<Computer[]> {
  const q = `includeProvisioningSteps=true${deleted ? '&includeDeleted=true' : ''}`;
  return (await api.call('GET', `/api/v0/computers?${q}`)).body.computers;
}

/** Polls the list until every id is active; answers each one's timing from `sentAt`. */
async function untilActive(api: Api, sentAt: Map<string, number>): Promise<Map<string, Timing>> {
  const done = new Map<string, Timing>();
  while (done.size < sentAt.size) {
    for (const c of await list(api)) {
      if (!sentAt.has(c.id) || done.has(c.id) || c.status === 'provisioning') continue;
      if (c.status !== 'active') throw new Error(`${c.name} ended in ${c.status}: ${JSON.stringify(c.provisioningSteps)}`);
      const infra = c.provisioningSteps!.find((s) => s.id === 'create-infrastructure')!;
      done.set(c.id, { total: Date.now() - sentAt.get(c.id)!, pulumi: infra.completedAt! - infra.startedAt! });
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return done;
}

async function deleteAll(api: Api): Promise<void> {
  const live = await list(api);
  await Promise.all(live.map((c) => api.call('DELETE', `/api/v0/computers/${c.id}`)));
  const ids = new Set(live.map((c) => c.id));
  for (;;) {
    const pending = (await list(api, true)).filter(
      (c) => ids.has(c.id) && c.provisioningSteps?.find((s) => s.id === 'teardown')?.status !== 'completed',
    );
    if (pending.length === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function createOne(api: Api, name: string): Promise<Timing> {
  const sent = Date.now();
  const res = await api.call('POST', '/api/v0/computers', { name, provider: 'local' });
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return (await untilActive(api, new Map([[res.body.id, sent]]))).get(res.body.id)!;
}

function report(label: string, timings: Timing[]) {
  const share = timings.reduce((a, t) => a + t.pulumi, 0) / timings.reduce((a, t) => a + t.total, 0);
  console.log(
    `${label}: to active median ${sec(median(timings.map((t) => t.total)))}, ` +
      `pulumi up median ${sec(median(timings.map((t) => t.pulumi)))}, share inside Pulumi ${pct(share)}`,
  );
}

async function main() {
  const missing = await localProviderMissing();
  if (missing) throw new Error(missing);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'agentplane-bench-'));
  chmodSync(dataDir, 0o711);
  const server = await startServerProcess({ AGENTPLANE_DATA_DIR: dataDir });
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
  try {
    // Warm-up: the first run loads the Pulumi CLI and plugin from a cold cache.
    await createOne(api, 'warm-up');
    await deleteAll(api);

    const singles: Timing[] = [];
    for (let i = 0; i < RUNS; i++) {
      singles.push(await createOne(api, `single-${i}`));
      await deleteAll(api);
    }
    report(`one computer (${RUNS} runs)`, singles);
    const one = median(singles.map((t) => t.total));
    console.log(`  goal < 15 s: ${one < 15_000 ? 'met' : 'NOT met'}`);

    let t0 = Date.now();
    const sequential: Timing[] = [];
    for (let i = 0; i < QUANTITY; i++) sequential.push(await createOne(api, `seq-${i}`));
    const sequentialWall = Date.now() - t0;
    report(`${QUANTITY} one after another`, sequential);
    console.log(`  wall ${sec(sequentialWall)}`);
    await deleteAll(api);

    t0 = Date.now();
    const res = await api.call('POST', '/api/v0/computers/bulk', { quantity: QUANTITY, namePrefix: 'bulk', provider: 'local' });
    if (res.status !== 201 || res.body.error) throw new Error(`bulk answered ${res.status}: ${JSON.stringify(res.body)}`);
    const accepted = Date.now() - t0;
    const bulk = await untilActive(api, new Map(res.body.computers.map((c: Computer) => [c.id, t0])));
    const bulkWall = Date.now() - t0;
    report(`bulk of ${QUANTITY}`, [...bulk.values()]);
    console.log(`  201 after ${sec(accepted)}, all active after ${sec(bulkWall)} = ${(bulkWall / one).toFixed(1)}x one computer (goal < 4x)`);
    console.log(`  vs ${QUANTITY} sequential: ${sec(sequentialWall)} (${(sequentialWall / bulkWall).toFixed(1)}x the bulk)`);
    await deleteAll(api);
  } catch (err) {
    console.error(server.output().split('\n').filter((l) => /"level":(40|50|60)/.test(l)).slice(-10).join('\n'));
    throw err;
  } finally {
    await deleteAll(api).catch(() => undefined);
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
