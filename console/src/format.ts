export function dateTime(ms: number | string | undefined | null): string {
  if (ms === undefined || ms === null) return '—';
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toLocaleString();
}

export function duration(start?: number, end?: number): string {
  if (!start) return '';
  const ms = (end ?? Date.now()) - start;
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function number(n: number | undefined | null): string {
  return n === undefined || n === null ? '—' : n.toLocaleString();
}

export function bytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

/** YYYY-MM-DD of a date in UTC, as the analytics API takes it. */
export function isoDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}
