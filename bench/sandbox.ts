/**
 * What the `local` sandbox (#35) costs, in one run: a cold `local` computer POST -> active, and a
 * claim from a warm pool of one, on this tree and on a baseline tree from before the sandbox
 * (BENCH_BASELINE_REF, default 811b1c5: bubblewrap, nftables and pids.max absent), each served by
 * its own `agentplane serve` on PGlite with the real Pulumi CLI. Run on demand, as root:
 *
 *   node bench/sandbox.ts
 *   BENCH_RUNS=7 BENCH_BASELINE_REF=<ref> node bench/sandbox.ts
 *
 * Goals: cold within 1.2x of the baseline; claim p50 under 100 ms.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { keyedCaller } from '../test/support/http.ts';
import { localProviderMissing } from '../test/support/local-computers.ts';
import { CLI, REPO_ROOT, startServerProcess } from '../test/support/server-process.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const BASELINE_REF = process.env.BENCH_BASELINE_REF ?? '811b1c5';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const sleep = (x: number) => new Promise((r) => setTimeout(r, x));

interface Figures {
  cold: number[];
  claim: number[];
}

/** Cold computers one after the other, then claims from a pool of one, on the server of `cli`. */
async function measure(label: string, cli: string): Promise<Figures> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `agentplane-bench-${label}-`));
  // Before the sandbox, the computers' users reached their homes through the data directory.
  chmodSync(dataDir, 0o711);
  const server = await startServerProcess(
    { AGENTPLANE_DATA_DIR: dataDir, AGENTPLANE_LOCAL_PROVIDER: 'true', AGENTPLANE_COMPUTER_IDLE_MINUTES: '0' },
    { command: [process.execPath, cli, 'serve'] },
  );
  const call = keyedCaller(server.url, server.firstStartKey!);
  const until = async <T>(what: string, probe: () => Promise<T | undefined>): Promise<T> => {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const v = await probe();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`${label}: timed out waiting for ${what}`);
      await sleep(25);
    }
  };
  const remove = async (id: string) => {
    await call('DELETE', `/api/v0/computers/${id}`);
    await until('the teardown', async () => {
      const all = (await call('GET', '/api/v0/computers?includeDeleted=true&includeUnlisted=true&includeProvisioningSteps=true')).body.computers;
      const c = all.find((x: { id: string }) => x.id === id);
      return c?.provisioningSteps?.find((st: { id: string }) => st.id === 'teardown')?.status === 'completed' ? true : undefined;
    });
  };
  const figures: Figures = { cold: [], claim: [] };
  try {
    for (let i = 0; i < RUNS; i++) {
      const sent = Date.now();
      const created = await call('POST', '/api/v0/computers', { name: `cold-${i}`, provider: 'local' });
      const id: string = created.body.id;
      await until('active', async () => {
        const c = (await call('GET', `/api/v0/computers/${id}`)).body;
        if (c.status === 'error') throw new Error(`${label}: ${JSON.stringify(c)}`);
        return c.status === 'active' ? true : undefined;
      });
      figures.cold.push(Date.now() - sent);
      await remove(id);
    }
    const ready = () =>
      until('the pool to be ready', async () => {
        const pool = (await call('GET', '/api/v0/computers/pool')).body.pools.find((p: { templateId?: string }) => !p.templateId);
        return pool?.ready === 1 && pool.provisioning === 0 ? true : undefined;
      });
    await call('PUT', '/api/v0/computers/pool/providers/local', { warmPoolSize: 1 });
    for (let i = 0; i < RUNS; i++) {
      await ready();
      const sent = Date.now();
      const claimed = await call('POST', '/api/v0/computers', { name: `claim-${i}`, provider: 'local' });
      if (claimed.body.status !== 'active') throw new Error(`${label}: the claim answered ${JSON.stringify(claimed.body)}`);
      figures.claim.push(Date.now() - sent);
      await remove(claimed.body.id);
    }
    await call('PUT', '/api/v0/computers/pool/providers/local', { warmPoolSize: 0 });
    for (const c of (await call('GET', '/api/v0/computers?includeUnlisted=true')).body.computers) await remove(c.id);
  } finally {
    await server.stop('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  }
  return figures;
}

async function main() {
  const missing = await localProviderMissing();
  if (missing) throw new Error(missing);
  // The baseline tree, with this tree's installed packages and generated client (same schema).
  const baseline = mkdtempSync(path.join(os.tmpdir(), 'agentplane-baseline-'));
  execFileSync('git', ['-C', REPO_ROOT, 'worktree', 'add', '--detach', '--force', baseline, BASELINE_REF], { stdio: 'ignore' });
  try {
    symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(baseline, 'node_modules'));
    if (!existsSync(path.join(baseline, 'src/generated'))) symlinkSync(path.join(REPO_ROOT, 'src/generated'), path.join(baseline, 'src/generated'));
    // One after the other on an otherwise idle machine.
    const base: Figures = { cold: [], claim: [] };
    const sandboxed: Figures = { cold: [], claim: [] };
    for (const [figures, label, cli] of [
      [base, 'baseline', path.join(baseline, 'bin/agentplane.js')],
      [sandboxed, 'sandbox', CLI],
    ] as const) {
      const got = await measure(label, cli);
      figures.cold.push(...got.cold);
      figures.claim.push(...got.claim);
    }
    const ratio = median(sandboxed.cold) / median(base.cold);
    console.log(`local computers, ${RUNS} runs each (medians)      baseline ${BASELINE_REF}   sandbox`);
    console.log(
      `cold POST -> active                      ${median(base.cold).toFixed(0).padStart(8)} ms ${median(sandboxed.cold).toFixed(0).padStart(8)} ms   ${ratio.toFixed(2)}x (goal <= 1.2x: ${ratio <= 1.2 ? 'met' : 'NOT met'})`,
    );
    console.log(
      `pool claim POST -> active (201)          ${median(base.claim).toFixed(0).padStart(8)} ms ${median(sandboxed.claim).toFixed(0).padStart(8)} ms   (goal < 100 ms: ${median(sandboxed.claim) < 100 ? 'met' : 'NOT met'})`,
    );
  } finally {
    execFileSync('git', ['-C', REPO_ROOT, 'worktree', 'remove', '--force', baseline], { stdio: 'ignore' });
  }
}

await main();
