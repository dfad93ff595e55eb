import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MetricsParseError, parseMetricsOutput } from '../../src/provisioning/machine/metrics-parse.ts';

const at = new Date('2026-01-02T03:04:05Z');
const captured = fs.readFileSync(new URL('../fixtures/machine-metrics/debian-2cpu.txt', import.meta.url), 'utf8');

describe('parseMetricsOutput', () => {
  it('reads a sample captured on a Debian machine', () => {
    expect(parseMetricsOutput(captured, at)).toEqual({
      timestamp: at,
      // 60 busy of 61 jiffies between the readings.
      cpuUsedPct: 98.4,
      cpuCount: 2,
      memUsed: (24684092 - 20249940) * 1024,
      memTotal: 24684092 * 1024,
      diskUsed: 21353864 * 1024,
      diskTotal: 264212084 * 1024,
    });
  });

  it('counts iowait as idle and steal as busy', () => {
    const out = [
      '@@stat1',
      'cpu  100 0 100 1000 100 0 0 0 0 0',
      '@@stat2',
      // +50 user, +100 idle, +100 iowait, +50 steal: 100 busy of 300.
      'cpu  150 0 100 1100 200 0 0 50 0 0',
      '@@meminfo',
      'MemTotal: 1000 kB',
      'MemAvailable: 250 kB',
      '@@nproc',
      '8',
      '@@df',
      'Filesystem 1024-blocks Used Available Capacity Mounted on',
      'tmpfs 2000 500 1500 25% /home',
    ].join('\n');
    expect(parseMetricsOutput(out, at)).toMatchObject({
      cpuUsedPct: 33.3,
      cpuCount: 8,
      memUsed: 750 * 1024,
      memTotal: 1000 * 1024,
      diskUsed: 500 * 1024,
      diskTotal: 2000 * 1024,
    });
  });

  it('falls back to free + buffers + cache without MemAvailable, and to /proc/stat CPU lines without nproc', () => {
    const out = [
      '@@stat1',
      'cpu  1 0 1 10 0',
      'cpu0 1 0 1 10 0',
      '@@stat2',
      'cpu  1 0 1 10 0',
      'cpu0 1 0 1 10 0',
      'cpu1 0 0 0 0 0',
      'cpu2 0 0 0 0 0',
      '@@meminfo',
      'MemTotal: 1000 kB',
      'MemFree: 100 kB',
      'Buffers: 50 kB',
      'Cached: 150 kB',
      '@@nproc',
      '@@df',
      'Filesystem 1024-blocks Used Available Capacity Mounted on',
      'map auto_home 10 4 6 40% /Volumes/My Disk',
    ].join('\n');
    expect(parseMetricsOutput(out, at)).toMatchObject({ cpuUsedPct: 0, cpuCount: 3, memUsed: 700 * 1024, diskUsed: 4 * 1024, diskTotal: 10 * 1024 });
  });

  it('refuses output without /proc (a non-Linux machine)', () => {
    const out = '@@stat1\n@@stat2\n@@meminfo\n@@nproc\n8\n@@df\n/dev/disk1s1 100 50 50 50% /\n';
    expect(() => parseMetricsOutput(out, at)).toThrow(MetricsParseError);
    expect(() => parseMetricsOutput(out, at)).toThrow(/no aggregate cpu line in the first/);
  });

  it('refuses df output without a data line', () => {
    const out = captured.replace(/\/dev\/vda.*\n/, '');
    expect(() => parseMetricsOutput(out, at)).toThrow(/no data line in the df output/);
  });
});
