import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleMetrics } from '../../src/provisioning/machine/index.ts';
import { skipMachineTests, startMachine, type TestMachine } from '../support/machine.ts';

/** MemTotal of /proc/meminfo on this machine, in bytes: the test sshd runs here. */
function localMemTotal(): number {
  const kb = /^MemTotal:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'))?.[1];
  return Number(kb) * 1024;
}

describe.skipIf(skipMachineTests)('sampleMetrics on a real machine', () => {
  let m: TestMachine;

  beforeAll(async () => {
    m = await startMachine();
  });
  afterAll(async () => {
    await m?.stop();
  });

  it('reads CPU, memory and disk in one command, within the bounds this machine has', async () => {
    const calls: string[] = [];
    const counting = { ...m.ssh, exec: (...args: Parameters<typeof m.ssh.exec>) => (calls.push(args[1]), m.ssh.exec(...args)) };
    const at = new Date('2026-03-04T05:06:07Z');
    const s = await sampleMetrics(counting, m.target, { now: () => at });
    expect(calls).toHaveLength(1);

    expect(s.timestamp).toEqual(at);
    expect(s.cpuCount).toBe(Number(execFileSync('nproc', { encoding: 'utf8' }).trim()));
    expect(s.cpuUsedPct).toBeGreaterThanOrEqual(0);
    expect(s.cpuUsedPct).toBeLessThanOrEqual(100);
    expect(s.memTotal).toBe(localMemTotal());
    expect(s.memUsed).toBeGreaterThan(0);
    expect(s.memUsed).toBeLessThan(s.memTotal);

    const df = execFileSync('df', ['-P', '-k', m.home], { encoding: 'utf8' }).trim().split('\n')[1]!.trim().split(/\s+/);
    expect(s.diskTotal).toBe(Number(df[1]) * 1024);
    expect(s.diskUsed).toBeGreaterThan(0);
    expect(s.diskUsed).toBeLessThanOrEqual(s.diskTotal);
  });

  it('sees the CPU busy while the machine spins', async () => {
    // One busy loop per CPU for a few seconds: the sample in the middle must show it.
    const started = Date.now();
    await m.sh(`for i in $(seq $(nproc)); do timeout 4 sh -c 'while :; do :; done' >/dev/null 2>&1 & done`);
    await new Promise((r) => setTimeout(r, 500));
    const s = await sampleMetrics(m.ssh, m.target);
    expect(Date.now() - started).toBeLessThan(3_500);
    expect(s.cpuUsedPct).toBeGreaterThan(50);
  });
});
