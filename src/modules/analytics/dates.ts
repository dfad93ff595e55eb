/** Analytics days are UTC calendar days written YYYY-MM-DD. */

const DAY_MS = 86_400_000;

/** Analytics history never starts before this day (spec 4.8). */
export const ANALYTICS_EPOCH = '2026-01-14';

export function isCalendarDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === value;
}

export function dayOf(instant: Date): string {
  return instant.toISOString().slice(0, 10);
}

export function dayStart(day: string): Date {
  return new Date(`${day}T00:00:00.000Z`);
}

export function addDays(day: string, n: number): string {
  return dayOf(new Date(dayStart(day).getTime() + n * DAY_MS));
}

/** Every day from `from` to `to`, both included. */
export function daysBetween(from: string, to: string): string[] {
  const out: string[] = [];
  for (let d = from; d <= to; d = addDays(d, 1)) out.push(d);
  return out;
}

function maxDay(a: string, b: string): string {
  return a > b ? a : b;
}

function minDay(a: string, b: string): string {
  return a < b ? a : b;
}

/**
 * The first day an organization has analytics for: the day it was created, or the day of its
 * earliest rolled-up activity if that is earlier (imported or seeded history), never before the
 * epoch.
 */
export function historyStart(createdAt: Date, firstRolledUpDay: string | null): string {
  const created = dayOf(createdAt);
  return maxDay(ANALYTICS_EPOCH, firstRolledUpDay ? minDay(created, firstRolledUpDay) : created);
}
