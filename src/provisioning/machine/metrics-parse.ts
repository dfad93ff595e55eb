/** One reading of a machine's load, in the units of the metrics API (bytes, percent). */
export interface MetricsSample {
  timestamp: Date;
  /** Busy share of all CPUs between the two /proc/stat readings, 0-100. */
  cpuUsedPct: number;
  cpuCount: number;
  memUsed: number;
  memTotal: number;
  diskUsed: number;
  diskTotal: number;
}

/** Section markers of the sampling command's output. */
const SECTIONS = ['stat1', 'stat2', 'meminfo', 'nproc', 'df'] as const;
type Section = (typeof SECTIONS)[number];

export class MetricsParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MetricsParseError';
  }
}

function sections(output: string): Map<Section, string[]> {
  const out = new Map<Section, string[]>();
  let current: Section | undefined;
  for (const line of output.split('\n')) {
    const m = /^@@(\w+)$/.exec(line.trim());
    if (m && (SECTIONS as readonly string[]).includes(m[1]!)) {
      current = m[1] as Section;
      out.set(current, []);
    } else if (current && line.trim() !== '') {
      out.get(current)!.push(line);
    }
  }
  return out;
}

/** Total and idle jiffies of the aggregate `cpu` line. */
function cpuTimes(lines: string[] | undefined, which: string): { total: number; idle: number } {
  const line = lines?.find((l) => /^cpu\s/.test(l));
  if (!line) throw new MetricsParseError(`no aggregate cpu line in the ${which} /proc/stat reading`);
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  if (v.length < 4 || v.some((n) => !Number.isFinite(n))) throw new MetricsParseError(`unreadable /proc/stat cpu line: ${line}`);
  // user nice system idle iowait irq softirq steal; guest and guest_nice are already inside user and nice.
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = v[3]! + (v[4] ?? 0);
  return { total, idle };
}

function meminfo(lines: string[] | undefined): { used: number; total: number } {
  const kb = new Map<string, number>();
  for (const line of lines ?? []) {
    const m = /^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+kB)?$/.exec(line.trim());
    if (m) kb.set(m[1]!, Number(m[2]));
  }
  const total = kb.get('MemTotal');
  if (total === undefined) throw new MetricsParseError('no MemTotal in /proc/meminfo');
  // MemAvailable exists since Linux 3.14; before it, free + buffers + page cache is the usual estimate.
  const available = kb.get('MemAvailable') ?? (kb.get('MemFree') ?? 0) + (kb.get('Buffers') ?? 0) + (kb.get('Cached') ?? 0);
  return { used: Math.max(0, total - available) * 1024, total: total * 1024 };
}

/**
 * `df -P -k` data line: the mount point may contain spaces and the device name too, so match the
 * four numeric columns in the middle rather than splitting.
 */
function disk(lines: string[] | undefined): { used: number; total: number } {
  for (const line of lines ?? []) {
    const m = /^.*?\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+%|-)\s+\/.*$/.exec(line.trim());
    if (m) return { total: Number(m[1]) * 1024, used: Number(m[2]) * 1024 };
  }
  throw new MetricsParseError(`no data line in the df output: ${(lines ?? []).join(' | ') || 'empty'}`);
}

/** Parses the output of the sampling command (see metrics.ts). */
export function parseMetricsOutput(output: string, timestamp: Date): MetricsSample {
  const s = sections(output);
  const a = cpuTimes(s.get('stat1'), 'first');
  const b = cpuTimes(s.get('stat2'), 'second');
  const dTotal = b.total - a.total;
  const busy = dTotal - (b.idle - a.idle);
  const cpuUsedPct = dTotal > 0 ? Math.min(100, Math.max(0, Math.round((busy / dTotal) * 1000) / 10)) : 0;
  const nproc = Number(s.get('nproc')?.[0]?.trim());
  // Without nproc, count the per-CPU lines of /proc/stat.
  const cpuCount = Number.isInteger(nproc) && nproc > 0 ? nproc : (s.get('stat2') ?? []).filter((l) => /^cpu\d+\s/.test(l)).length;
  if (cpuCount < 1) throw new MetricsParseError('cannot tell the number of CPUs');
  const mem = meminfo(s.get('meminfo'));
  const d = disk(s.get('df'));
  return { timestamp, cpuUsedPct, cpuCount, memUsed: mem.used, memTotal: mem.total, diskUsed: d.used, diskTotal: d.total };
}
