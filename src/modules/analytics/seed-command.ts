import { z } from 'zod';
import type { PrismaClient } from '../../db/client.ts';
import type { Clock } from '../../lib/clock.ts';
import { addDays, dayOf, isCalendarDate } from './dates.ts';
import { seedAnalytics } from './seed.ts';

const positive = (flag: string, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, `${flag} must be a whole number`)
    .transform(Number)
    .pipe(z.number().int().min(1, `${flag} must be at least 1`).max(max, `${flag} must be at most ${max}`));

const OptionsSchema = z.object({
  org: z.string().min(1),
  users: positive('--users', 100_000),
  days: positive('--days', 3_660),
  seed: z
    .string()
    .regex(/^-?[0-9]+$/, '--seed must be an integer')
    .transform(Number),
  end: z.string().refine(isCalendarDate, '--end must be a date YYYY-MM-DD').optional(),
});

/** `agentplane analytics seed`: checks the flags, seeds, and reports progress through `print`. */
export async function seedCommand(prisma: PrismaClient, raw: Record<string, unknown>, clock: Clock, print: (line: string) => void) {
  const parsed = OptionsSchema.safeParse(raw);
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => i.message).join('; '));
  const opts = parsed.data;
  const yesterday = addDays(dayOf(clock.now()), -1);
  const endDay = opts.end ?? yesterday;
  if (endDay > yesterday) throw new Error(`--end ${endDay} is not in the past; analytics covers days through yesterday (${yesterday})`);
  const started = Date.now();
  let lastMonth = '';
  const result = await seedAnalytics(prisma, {
    organizationId: opts.org,
    users: opts.users,
    days: opts.days,
    endDay,
    seed: opts.seed,
    onDay: (day) => {
      if (day.slice(0, 7) !== lastMonth) print(`seeding ${(lastMonth = day.slice(0, 7))}`);
    },
  });
  print(
    `seeded ${result.events} events for ${opts.users} users over ${result.days.length} days ` +
      `(${result.days[0]} to ${result.days.at(-1)}) and rolled them up in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}
