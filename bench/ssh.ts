/**
 * SSH connection-layer benchmark against real OpenSSH servers on loopback. Run on demand:
 *
 *   node bench/ssh.ts                       # 5 runs of each measurement
 *   BENCH_RUNS=3 node bench/ssh.ts
 *
 * Measures the latency of `true` on a pooled connection and on a fresh connection per command
 * (goal: pooled under 10 ms median), and the wall time of 100 concurrent commands spread over
 * 10 machines (10 sshd instances, MaxSessions 10 each). Each figure is the median of the runs.
 */
import { createSshClient, type SshTarget } from '../src/ssh/index.ts';
import { sshdMissing, startSshd, type TestSshd } from '../test/support/sshd.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const POOLED_PER_RUN = 200;
const FRESH_PER_RUN = 30;
const MACHINES = 10;
const CONCURRENT = 100;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const ms = (x: number): string => `${x.toFixed(2)} ms`;

function targetOf(s: TestSshd): SshTarget {
  return { host: s.host, port: s.port, username: s.username, privateKey: s.privateKey, hostKeyFingerprint: s.hostKeyFingerprint };
}

async function pooled(target: SshTarget): Promise<{ median: number; p95: number }> {
  const ssh = createSshClient();
  try {
    for (let i = 0; i < 20; i++) await ssh.exec(target, 'true');
    const times: number[] = [];
    for (let i = 0; i < POOLED_PER_RUN; i++) {
      const t0 = performance.now();
      await ssh.exec(target, 'true');
      times.push(performance.now() - t0);
    }
    return { median: median(times), p95: pct(times, 0.95) };
  } finally {
    await ssh.close();
  }
}

async function fresh(target: SshTarget): Promise<{ median: number; p95: number }> {
  const times: number[] = [];
  for (let i = 0; i < FRESH_PER_RUN; i++) {
    const t0 = performance.now();
    const ssh = createSshClient();
    await ssh.exec(target, 'true');
    times.push(performance.now() - t0);
    await ssh.close();
  }
  return { median: median(times), p95: pct(times, 0.95) };
}

async function concurrent(targets: SshTarget[], warm: boolean): Promise<{ wall: number; perCommandMedian: number }> {
  const ssh = createSshClient();
  try {
    if (warm) await Promise.all(targets.map((t) => ssh.exec(t, 'true')));
    const latencies: number[] = [];
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENT }, async (_, i) => {
        const s = performance.now();
        const res = await ssh.exec(targets[i % targets.length]!, 'true');
        if (res.exitCode !== 0) throw new Error(`command ${i} exited ${res.exitCode} ${res.signal} ${JSON.stringify(res)}`);
        latencies.push(performance.now() - s);
      }),
    );
    return { wall: performance.now() - t0, perCommandMedian: median(latencies) };
  } finally {
    await ssh.close();
  }
}

async function main(): Promise<void> {
  const missing = sshdMissing();
  if (missing) throw new Error(missing);
  console.log(`starting ${MACHINES} sshd instances...`);
  const servers = await Promise.all(Array.from({ length: MACHINES }, () => startSshd()));
  const targets = servers.map(targetOf);
  try {
    const rows: Record<string, number[]> = {};
    const add = (k: string, v: number) => (rows[k] ??= []).push(v);
    for (let run = 1; run <= RUNS; run++) {
      const p = await pooled(targets[0]!);
      add('pooled median', p.median);
      add('pooled p95', p.p95);
      const f = await fresh(targets[0]!);
      add('fresh median', f.median);
      add('fresh p95', f.p95);
      const cold = await concurrent(targets, false);
      add(`${CONCURRENT} concurrent / ${MACHINES} machines, cold pool: wall`, cold.wall);
      const warm = await concurrent(targets, true);
      add(`${CONCURRENT} concurrent / ${MACHINES} machines, warm pool: wall`, warm.wall);
      add(`${CONCURRENT} concurrent / ${MACHINES} machines, warm pool: per command`, warm.perCommandMedian);
      console.log(`run ${run}/${RUNS}: pooled ${ms(p.median)}, fresh ${ms(f.median)}, 100 concurrent cold ${ms(cold.wall)} warm ${ms(warm.wall)}`);
    }
    console.log(`\nSSH connection layer, loopback, \`true\`, median of ${RUNS} runs:`);
    for (const [k, v] of Object.entries(rows)) console.log(`  ${k.padEnd(60)} ${ms(median(v))}`);
    const pooledMedian = median(rows['pooled median']!);
    console.log(`\n  goal pooled < 10 ms median: ${pooledMedian < 10 ? 'met' : 'NOT met'} (${ms(pooledMedian)})`);
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

await main();
