import type { SshClient, SshTarget } from '../../ssh/index.ts';
import { MachineCommandFailed, tailOf } from './errors.ts';
import { MetricsParseError, parseMetricsOutput, type MetricsSample } from './metrics-parse.ts';

/** CPU use is the busy share of the jiffies that pass between two /proc/stat readings this far apart. */
const CPU_WINDOW_SECONDS = 0.3;

const COMMAND = [
  'echo @@stat1',
  'grep "^cpu" /proc/stat',
  `sleep ${CPU_WINDOW_SECONDS}`,
  'echo @@stat2',
  'grep "^cpu" /proc/stat',
  'echo @@meminfo',
  'grep -E "^(MemTotal|MemAvailable|MemFree|Buffers|Cached):" /proc/meminfo',
  'echo @@nproc',
  'nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null',
  'echo @@df',
  // The home directory's file system is where the user's repositories and builds live.
  'df -P -k "$HOME" 2>/dev/null || df -P -k /',
].join('\n');

/**
 * One metrics sample of a Linux machine, in one command. `timestamp` is when the reading ended,
 * from `now` (the caller's clock).
 */
export async function sampleMetrics(
  ssh: SshClient,
  target: SshTarget,
  opts: { signal?: AbortSignal; timeoutMs?: number; now?: () => Date } = {},
): Promise<MetricsSample> {
  const res = await ssh.exec(target, COMMAND, { signal: opts.signal, timeoutMs: opts.timeoutMs ?? 15_000 });
  const timestamp = (opts.now ?? (() => new Date()))();
  try {
    return parseMetricsOutput(res.stdout, timestamp);
  } catch (err) {
    if (!(err instanceof MetricsParseError)) throw err;
    throw new MachineCommandFailed({
      operation: 'metrics',
      message: `cannot read metrics from the machine (it needs Linux /proc and df): ${err.message}${res.stderr.trim() ? `; ${tailOf(res.stderr, 500)}` : ''}`,
      exitCode: res.exitCode,
      outputTail: tailOf(res.stdout + res.stderr),
    });
  }
}
