/** minute, hour, day of month, month, day of week: the 5-field cron of GitHub's and Gitea's `schedule`. */
const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] },
  { name: 'day of week', min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
] as const;

function value(raw: string, f: (typeof FIELDS)[number]): number | undefined {
  const named = 'names' in f ? (f.names as readonly string[]).indexOf(raw.toLowerCase()) : -1;
  if (named >= 0) return named + (f.name === 'month' ? 1 : 0);
  if (!/^\d+$/.test(raw)) return undefined;
  const n = Number(raw);
  return n >= f.min && n <= f.max ? n : undefined;
}

/** Why a cron expression is not a valid 5-field schedule, or undefined when it is. */
export function cronProblem(expr: string): string | undefined {
  const parts = expr.trim().split(/\s+/);
  if (parts.length !== 5) return `must have 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`;
  for (const [i, part] of parts.entries()) {
    const f = FIELDS[i]!;
    for (const item of part.split(',')) {
      const [range, step] = item.split('/');
      if (step !== undefined && !(/^\d+$/.test(step) && Number(step) > 0)) return `${f.name}: step "${step}" must be a positive integer`;
      if (range === '*') continue;
      const [from, to] = range!.split('-');
      const a = value(from ?? '', f);
      const b = to === undefined ? a : value(to, f);
      if (a === undefined || b === undefined) return `${f.name}: "${item}" is not a value from ${f.min} to ${f.max}`;
      if (b < a) return `${f.name}: range "${range}" runs backwards`;
    }
  }
  return undefined;
}
