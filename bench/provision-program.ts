/**
 * The program-computer figures of bench/provision.ts (issue #29): a template whose program is the
 * dial-in example (examples/environments/dial-in-user, pushed to a real Gitea), made through the
 * API as a user would: the template resolves and previews its commit, then
 * - POST -> `active` of one computer made from it (a unix user whose `agentplane agent` dials in
 *   through the relay and registers with its token), beside the built-in `local` provider's time
 *   from the same run (goal within 1.5x);
 * - claims from the template's warm pool, POST -> 201 active (goal p50 < 100 ms).
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { giteaBinDir, giteaMissing, startGitea } from '../test/support/gitea.ts';
import { CLI, REPO_ROOT } from '../test/support/server-process.ts';

const EXAMPLE = 'examples/environments/dial-in-user';

interface Api {
  call(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }>;
}

/** What the program section needs of the benchmark around it. */
export interface ProgramBench {
  api: Api;
  /** POST body -> the computer's time to `active` (ms), with its `pulumi up` and its set-up after it; fails on `error`. */
  createTimed(body: Record<string, unknown>): Promise<{ total: number; pulumi: number; setup: number; steps: Record<string, { wait: number; run: number }> }>;
  deleteAll(): Promise<void>;
  /** The built-in `local` provider's POST -> active median of this run. */
  localMedianMs: number;
  runs: number;
  claims: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.99) - 1)]!;
const ms = (x: number) => `${x.toFixed(0)} ms`;
const goal = (ok: boolean) => (ok ? 'met' : 'NOT met');
const sleep = (x: number) => new Promise((r) => setTimeout(r, x));

/** Why the program figures cannot run here, or undefined. */
export function programBenchMissing(): string | undefined {
  return giteaMissing() ?? (process.getuid?.() === 0 ? undefined : 'the dial-in example creates unix users: run as root');
}

/**
 * `agentplane` on the server's PATH, as the dial-in example asks: a directory to put first on the
 * PATH the server process is started with (removed by the returned function).
 */
export function agentplaneOnPath(): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agentplane-bin-'));
  chmodSync(dir, 0o755);
  writeFileSync(path.join(dir, 'agentplane'), `#!/bin/sh\nexec ${process.execPath} ${CLI} "$@"\n`, { mode: 0o755 });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function programFigures(bench: ProgramBench): Promise<void> {
  const gitea = await startGitea(giteaBinDir()!);
  try {
    const owner = await gitea.createUser('platform');
    const repo = await gitea.createRepo(owner, {
      name: 'environments',
      files: { [`${EXAMPLE}/Pulumi.yaml`]: readFileSync(path.join(REPO_ROOT, EXAMPLE, 'Pulumi.yaml'), 'utf8') },
    });
    const created = await bench.api.call('POST', '/api/v0/computer-templates', {
      name: 'dial-in',
      program: { repository: `${gitea.url}/${repo}.git`, path: EXAMPLE, ref: 'main' },
      registrationTimeoutSeconds: 120,
    });
    if (created.status !== 201) throw new Error(`template create answered ${created.status}: ${JSON.stringify(created.body)}`);
    const templateId = created.body.id as string;
    const t0 = Date.now();
    for (;;) {
      const t = (await bench.api.call('GET', `/api/v0/computer-templates/${templateId}`)).body;
      if (t.status === 'ready') break;
      if (t.status === 'failed') throw new Error(`the template failed: ${t.statusMessage}`);
      if (Date.now() - t0 > 180_000) throw new Error(`the template is still ${t.status}`);
      await sleep(200);
    }
    console.log(`program template resolved and previewed in ${ms(Date.now() - t0)}`);

    const source = { kind: 'template', templateId, isListed: true };
    // Warm-up: the first checkout of the commit and the first YAML program run load their plugins cold.
    await bench.createTimed({ name: 'program-warm-up', source });
    await bench.deleteAll();
    const timings: Awaited<ReturnType<ProgramBench['createTimed']>>[] = [];
    for (let i = 0; i < bench.runs; i++) {
      timings.push(await bench.createTimed({ name: `program-${i}`, source }));
      await bench.deleteAll();
    }
    const singles = timings.map((t) => t.total);
    const one = median(singles);
    console.log(
      `program computer (dial-in example, ${bench.runs} runs): POST -> active median ${ms(one)} p99 ${ms(p99(singles))} ` +
        `(pulumi up ${ms(median(timings.map((t) => t.pulumi)))}, then registration and set-up ${ms(median(timings.map((t) => t.setup)))}) = ` +
        `${(one / bench.localMedianMs).toFixed(2)}x the local provider's ${ms(bench.localMedianMs)}; goal within 1.5x: ${goal(one <= 1.5 * bench.localMedianMs)}`,
    );

    const ids = [...new Set(timings.flatMap((t) => Object.keys(t.steps)))];
    const phase = (id: string, k: 'wait' | 'run') => median(timings.map((t) => t.steps[id]?.[k] ?? 0));
    console.log(
      `  after pulumi up, median per step (waited before it + ran): ${ids.map((id) => `${id} ${ms(phase(id, 'wait'))} + ${ms(phase(id, 'run'))}`).join(', ')}`,
    );

    const sized = await bench.api.call('PATCH', `/api/v0/computer-templates/${templateId}`, { warmPoolSize: bench.claims });
    if (sized.status !== 200) throw new Error(`PATCH warmPoolSize answered ${sized.status}: ${JSON.stringify(sized.body)}`);
    const fill = Date.now();
    for (;;) {
      const pool = (await bench.api.call('GET', '/api/v0/computers/pool')).body.pools.find((p: { templateId?: string }) => p.templateId === templateId);
      if ((pool?.ready ?? 0) === bench.claims && (pool?.provisioning ?? 0) === 0) break;
      if (pool?.failed) throw new Error(`the program pool has ${pool.failed} failed computers`);
      if (Date.now() - fill > 600_000) throw new Error(`the program pool is not full: ${JSON.stringify(pool)}`);
      await sleep(200);
    }
    console.log(`program pool of ${bench.claims} filled in ${ms(Date.now() - fill)}`);
    const claims: number[] = [];
    for (let i = 0; i < bench.claims; i++) {
      const sent = performance.now();
      const res = await bench.api.call('POST', '/api/v0/computers', { name: `program-warm-${i}`, source });
      claims.push(performance.now() - sent);
      if (res.status !== 201 || res.body.status !== 'active') throw new Error(`claim answered ${res.status} ${JSON.stringify(res.body)}`);
    }
    console.log(
      `program pool, POST -> active (${bench.claims} claims): median ${ms(median(claims))} p99 ${ms(p99(claims))}; ` +
        `goal p50 < 100 ms: ${goal(median(claims) < 100)}  [cold program computer ${ms(one)}]`,
    );
    await bench.api.call('PATCH', `/api/v0/computer-templates/${templateId}`, { warmPoolSize: 0 });
    await bench.deleteAll();
  } finally {
    await gitea.stop();
  }
}
